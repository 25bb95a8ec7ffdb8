package temporal

import (
	"errors"
	"strconv"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// DefaultPayloadLimit is the default payload limit, 2 MiB: the Temporal
// server's default per-payload limit (its dynamic config
// limit.blobSize.error). A request or a result over the limit is refused
// before Temporal sees it.
const DefaultPayloadLimit int64 = 2 << 20

// payloadReserve is what the worker keeps of the payload limit for the
// fields of a Result other than its value: the effect's MaxOutputBytes is
// lowered to the payload limit less this, so a value too large for a
// payload is the typed failure limitExceeded (output), not a refusal.
const payloadReserve int64 = 16 << 10

// ErrPayloadTooLarge is matched (with errors.Is) by a *PayloadError.
var ErrPayloadTooLarge = errors.New("sandbank/temporal: payload too large")

// PayloadError says that a request or a result, encoded as Temporal carries
// it, is over the payload limit. It is not retryable: the same run gives the
// same size. This package does not offload large payloads to a claim-check
// store; keep inputs and results small, or pass a reference to data the
// script's caller stores elsewhere.
type PayloadError struct {
	// What is "request" or "result".
	What string
	// Bytes is the encoded size; Limit is the payload limit it is over.
	Bytes, Limit int64
}

// Error names the limit: "sandbank/temporal: the request is 3000000 bytes
// encoded, over the payload limit of 2097152 bytes".
func (e *PayloadError) Error() string {
	return "sandbank/temporal: the " + e.What + " is " + strconv.FormatInt(e.Bytes, 10) +
		" bytes encoded, over the payload limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// Unwrap returns ErrPayloadTooLarge.
func (e *PayloadError) Unwrap() error { return ErrPayloadTooLarge }

// checkPayload encodes v with Temporal's default data converter and
// returns a *PayloadError when the encoded payload is over limit.
func checkPayload(what string, v any, limit int64) error {
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		return err
	}
	n := int64(proto.Size(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}))
	if n > limit {
		return &PayloadError{What: what, Bytes: n, Limit: limit}
	}
	return nil
}

// CheckRequest returns a *PayloadError when r, encoded as Temporal carries
// it, is over limit (zero means DefaultPayloadLimit). Execute calls it
// before scheduling a run; a client that starts a workflow with requests in
// its input can call it first.
func CheckRequest(r Request, limit int64) error {
	if limit <= 0 {
		limit = DefaultPayloadLimit
	}
	return checkPayload("request", r, limit)
}
