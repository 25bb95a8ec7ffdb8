package temporal

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sandbank/sandbank/effect"

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
// fields of a record other than its value and its logs (stats, receipt,
// capabilities).
const payloadReserve int64 = 16 << 10

// logLineOverhead bounds what one log line adds to a record's JSON besides
// its text (level, stream, time, quotes and keys).
const logLineOverhead = 96

// fitPayload lowers eo's log and output bounds so that a record fits in
// limit bytes as Temporal carries it: the logs get at most an eighth of the
// limit, the value what is left after the logs and payloadReserve. Text
// that JSON escapes (quotes, <, >, &) can still make a record larger: the
// activity checks every record and refuses one over the limit.
func fitPayload(eo *effect.Options, limit int64) error {
	maxLog := eo.MaxLogBytes
	if maxLog == 0 {
		maxLog = effect.DefaultMaxLogBytes
	}
	eo.MaxLogBytes = max(1, min(maxLog, limit/8))
	lines := int64(eo.MaxLogLines)
	if lines == 0 {
		lines = effect.DefaultMaxLogLines
	}
	room := limit - payloadReserve - eo.MaxLogBytes - lines*logLineOverhead
	if room <= 0 {
		return fmt.Errorf("%w: PayloadLimit %d leaves no room for a value after the record's logs and fields", ErrInvalidOptions, limit)
	}
	maxOut := eo.MaxOutputBytes
	if maxOut == 0 {
		maxOut = effect.DefaultMaxOutputBytes
	}
	eo.MaxOutputBytes = min(maxOut, room)
	return nil
}

// ErrPayloadTooLarge is matched (with errors.Is) by a *PayloadError.
var ErrPayloadTooLarge = errors.New("sandbank/temporal: payload too large")

// PayloadError says that a request or a result, encoded as Temporal carries
// it, is over the payload limit. It is not retryable: the same run gives the
// same size. This package offloads only input files to a claim-check store
// (Request.StoredFiles); keep inputs and results small, or pass a
// reference to data the script's caller stores elsewhere.
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
