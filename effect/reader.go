package effect

import "context"

// ScriptReader fetches script bytes by content address. A script that is
// not there is reported with an error for which errors.Is(err,
// fs.ErrNotExist) holds.
type ScriptReader interface {
	ReadScript(ctx context.Context, addr Address) ([]byte, error)
}
