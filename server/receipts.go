package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// RunHeader is the response header of POST /v1/runs that holds the run's
// id, by which GET /v1/runs/{run}/receipt finds its receipt.
const RunHeader = "Sandbank-Run"

// StoredReceipt is the response of GET /v1/runs/{run}/receipt.
type StoredReceipt struct {
	Run     string         `json:"run" doc:"The run's id, as POST /v1/runs answered it in the Sandbank-Run header."`
	Receipt record.Receipt `json:"receipt" doc:"The run's receipt, as the run's record held it."`
}

type receiptInput struct {
	Run string `path:"run" pattern:"^[0-9a-f]{32}$" doc:"The run's id (the Sandbank-Run header of its answer)."`
}
type receiptOutput struct{ Body StoredReceipt }

// registerReceipts declares GET /v1/runs/{run}/receipt.
func (s *Server) registerReceipts(api huma.API, errs func(codes ...int) map[string]*huma.Response, secured []map[string][]string) {
	huma.Register(api, huma.Operation{
		OperationID: "getReceipt", Method: http.MethodGet, Path: "/v1/runs/{run}/receipt",
		Summary:     "Get a run's receipt",
		Description: "The receipt of a run the tenant made, by the run's id (the Sandbank-Run header of its answer). Every run answered with 200 has its receipt kept before the answer is sent; with a data directory it survives restarts, until the receipt log's rotation removes it. 404: no such run for this tenant (another tenant's run is unknown).",
		Responses:   errs(401, 404, 422, 429, 503),
		Security:    secured,
	}, s.getReceipt)
}

func (s *Server) getReceipt(ctx context.Context, in *receiptInput) (*receiptOutput, error) {
	_, receipts, err := s.data.Tenant(tenantOf(ctx).Name)
	if err != nil {
		return nil, unavailable(KindInfrastructure, "server: the tenant's data could not be opened", time.Second)
	}
	r, ok, err := receipts.Get(in.Run)
	switch {
	case err != nil:
		return nil, unavailable(KindInfrastructure, "server: reading the receipt failed", time.Second)
	case !ok:
		return nil, invalidCall(http.StatusNotFound, "server: no run "+in.Run+" in the tenant's receipts")
	}
	return &receiptOutput{Body: StoredReceipt{Run: in.Run, Receipt: r}}, nil
}

// keep logs the receipt of a run about to be answered with its record
// under a new run id, which it returns: with a data directory, the
// receipt is on disk (synced) when keep returns.
func (s *Server) keep(ctx context.Context, rec *effect.Record) (string, *Problem) {
	_, receipts, err := s.data.Tenant(tenantOf(ctx).Name)
	if err != nil {
		return "", unavailable(KindInfrastructure, "server: the tenant's data could not be opened", time.Second)
	}
	run := storage.NewRunID()
	if err := receipts.Append(run, rec.Receipt); err != nil {
		s.log.Warn("sandbank: receipt log: a receipt could not be kept; the run is answered 503", slog.String("error", effect.Excerpt(err.Error())))
		return "", unavailable(KindInfrastructure, "server: keeping the run's receipt failed", time.Second)
	}
	return run, nil
}
