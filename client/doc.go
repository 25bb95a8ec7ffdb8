// Package client is the Go client of a Sandbank server (sandbank serve,
// package server): Go callers on another machine get the effect's
// guarantees over HTTP with the same three kinds of error.
//
//	c, err := client.New("http://127.0.0.1:8080", &client.Options{APIKey: key})
//	rec, err := c.Run(ctx, client.Run{Language: "javascript", Source: "input.n * 2", Input: map[string]int{"n": 21}})
//
// # Errors
//
// Run's error is, as the effect's is, one of three kinds:
//
//   - the script's typed failure: an *effect.Failure, decoded from the run
//     record (errors.As(err, &failure), errors.Is(err,
//     effect.ErrLimitExceeded)); the record is returned beside it;
//   - the caller's invalid request (a 4xx other than 429): an *Error that
//     matches effect.ErrInvalidCall, and ErrUnauthorized or ErrNotFound
//     where they apply; not retryable;
//   - retryable infrastructure: an *Error with Retryable true (429, 503,
//     other 5xx, a connection that failed or closed), carrying the
//     server's Retry-After; it matches ErrRetryable (and
//     effect.ErrOverloaded when the server was overloaded) and never
//     effect.ErrInvalidCall. The caller's own cancellation stays
//     matchable with errors.Is(err, context.Canceled).
//
// effect.KindOf and effect.Retryable classify the client's errors as they
// do the effect's.
//
// The client does not retry by itself: whether a run may be repeated is
// the caller's decision (a run is idempotent only where the engine's
// declaration makes it so).
package client
