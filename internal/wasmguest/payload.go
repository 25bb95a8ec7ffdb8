package wasmguest

import "encoding/json"

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
	RecHostCall  = 'H' // <units>\n<JSON [name, argument text]> then the end marker; the reply comes on stdin (hostcall.go)
)

// FramePrefix starts every framed record, followed by the nonce and the
// record kind. The record separator byte keeps it off any line a human
// would print.
const FramePrefix = "\x1eSBK"

// Payload returns what the host writes to the guest's stdin for one run:
// the nonce on the first line, the script as a JSON string literal on the
// second (invalid UTF-8 becomes the escape \ufffd, as encoding/json
// writes it), and
// the caller's input (JSON text, possibly spanning lines) as the rest.
func Payload(n Nonce, script []byte, input []byte) []byte {
	lit, _ := json.Marshal(string(script)) // a string always marshals
	buf := make([]byte, 0, len(n)+len(lit)+len(input)+2)
	buf = append(buf, n...)
	buf = append(buf, '\n')
	buf = append(buf, lit...)
	buf = append(buf, '\n')
	return append(buf, input...)
}
