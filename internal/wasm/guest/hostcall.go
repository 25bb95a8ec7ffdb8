package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"

	"github.com/sandbank/sandbank/spi"
)

// Host calls over the framed stdio protocol (SPI 1.1). The wrapper writes
// a host-call record on stdout (the nonce, "H", the body's length in
// UTF-16 units, the body [name, argument as JSON text], the end marker)
// and then blocks reading stdin; the host's reader of stdin finds the
// record, asks the broker, and serves the reply: a line "O<bytes>" with
// the answer's JSON text or "F<bytes>" with the failure's message, then
// those bytes. The wrapper settles the call's promise with the answer, or
// rejects it with an Error whose message is the failure's text.

// TakeHostCall removes the first complete host-call record from the
// stream and returns its body, or false when there is none.
func (s *Stdout) TakeHostCall() ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.marker(RecHostCall)
	i := bytes.Index(s.buf, m)
	if i < 0 {
		return nil, false
	}
	body, ok := s.body(RecHostCall)
	if !ok {
		return nil, false
	}
	end := i + len(m) + bytes.IndexByte(s.buf[i+len(m):], '\n') + 1 + len(body) + len(s.marker('E'))
	body = append([]byte(nil), body...)
	s.buf = append(s.buf[:i], s.buf[end:]...)
	return body, true
}

// Stdin is the guest's stdin for one run: the payload, then the replies
// to the run's host calls. It never reports io.EOF while a host call is
// waiting for its reply (the guest's C library would then refuse every
// later read); with no payload left and no call waiting, it reports
// io.EOF.
type Stdin struct {
	payload *bytes.Reader
	stdout  *Stdout
	host    spi.Host
	ctx     context.Context
	reply   bytes.Reader
}

// NewStdin returns the stdin of a run whose payload is payload, whose
// stdout sink is stdout and whose host calls go to host with ctx (nil
// host: the run has none).
func NewStdin(ctx context.Context, payload []byte, stdout *Stdout, host spi.Host) *Stdin {
	return &Stdin{payload: bytes.NewReader(payload), stdout: stdout, host: host, ctx: ctx}
}

// Read implements io.Reader.
func (s *Stdin) Read(p []byte) (int, error) {
	if s.payload.Len() > 0 {
		return s.payload.Read(p)
	}
	if s.reply.Len() > 0 {
		return s.reply.Read(p)
	}
	if s.host == nil {
		return 0, io.EOF
	}
	body, ok := s.stdout.TakeHostCall()
	if !ok {
		return 0, io.EOF
	}
	s.reply.Reset(Reply(s.call(body)))
	return s.reply.Read(p)
}

// call decodes a host-call body and asks the broker.
func (s *Stdin) call(body []byte) ([]byte, error) {
	var rec [2]string
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, errMalformedCall
	}
	return s.host.Call(s.ctx, rec[0], json.RawMessage(rec[1]))
}

type callError string

func (e callError) Error() string { return string(e) }

const errMalformedCall = callError("the guest's host-call record is malformed")

// Reply is the bytes of a host call's reply on stdin.
func Reply(answer []byte, err error) []byte {
	kind, body := byte('O'), answer
	if err != nil {
		kind, body = 'F', []byte(err.Error())
	}
	out := make([]byte, 0, len(body)+16)
	out = append(out, kind)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, '\n')
	return append(out, body...)
}
