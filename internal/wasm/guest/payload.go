package guest

import (
	"strconv"

	"github.com/sandbank/sandbank/internal/jsonstr"
)

// Record kinds: the letter that follows the nonce in a framed record.
const (
	RecStart     = 'S' // the input is parsed; the script starts now
	RecResult    = 'R' // <units>\n<JSON text> then the end marker
	RecThrew     = 'T' // <units>\n<JSON [name, message]> then the end marker
	RecMemory    = 'M' // the script ran out of memory
	RecInputOOM  = 'I' // the input could not be parsed within memory
	RecScriptOOM = 'C' // the script could not be read within memory
	RecProtocol  = 'X' // the payload was malformed (a host bug)
	RecCPU       = 'P' // the script's step budget ran out
	RecHostCall  = 'H' // <units>\n<JSON [name, argument text]> then the end marker; the reply comes on stdin
	RecFile      = 'D' // <units>\n<JSON header> then the end marker (and a write's data and the end marker); the reply comes on stdin (files.go)
)

// FramePrefix starts every framed record, followed by the nonce and the
// record kind. The record separator byte keeps it off any line a human
// would print.
const FramePrefix = "\x1eSBK"

// Payload returns what the host writes to the guest's stdin for one run:
// the nonce on the first line, the script as a JSON string literal on the
// second (internal/jsonstr: as encoding/json writes it with HTML escaping
// off; invalid UTF-8 becomes the escape \ufffd), and the caller's input (JSON text, possibly spanning lines) as the rest.
func Payload(n Nonce, script []byte, input []byte) []byte {
	return append(head(n, script, len(input)), input...)
}

// SizedPayload is [Payload] for a guest that keeps reading stdin after the
// input (the replies to its host calls, see [Stdin]): between the script
// and the input, a line holds the input's length in bytes, prefixed with
// "h" when the run has host functions, so the guest reads exactly the
// input and knows whether to offer its host calls.
func SizedPayload(n Nonce, script []byte, input []byte, host bool) []byte {
	buf := head(n, script, len(input)+24)
	if host {
		buf = append(buf, 'h')
	}
	buf = strconv.AppendInt(buf, int64(len(input)), 10)
	buf = append(buf, '\n')
	return append(buf, input...)
}

// head is the nonce line and the script line of a payload, in a buffer
// with room for extra more bytes.
func head(n Nonce, script []byte, extra int) []byte {
	// Room for the script's literal when it needs few escapes.
	buf := make([]byte, 0, len(n)+len(script)+extra+16)
	buf = append(buf, n...)
	buf = append(buf, '\n')
	buf = jsonstr.Append(buf, script)
	return append(buf, '\n')
}
