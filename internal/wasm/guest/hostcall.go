package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

// Host calls over the framed stdio protocol (SPI 1.1). The guest writes
// a host-call record on stdout (the nonce, "H", the body's length in
// UTF-16 units, the body, the end marker) and reads the reply on stdin;
// the host's reader of stdin (Stdin) finds the records, asks the broker
// and serves the replies. Two forms:
//
//   - One call at a time: the body is [name, argument as JSON text]; the
//     guest blocks on stdin for the reply ([Reply]): a line "O<bytes>"
//     with the answer's JSON text or "F<bytes>" with the failure's
//     message, then those bytes.
//   - Several calls in flight: the body is "<id>:<argument>\n<name>", id
//     a number the guest chose, the argument and the name (a string) as
//     JSON texts, which hold no raw newline. The guest writes every call its script
//     issued and reads stdin only when it has nothing else to do; the host
//     starts every call it finds (spi.HostStarter: the broker runs them
//     concurrently, in the order written) and, once at least one answered,
//     serves every answer that arrived as one batch ([Batch]): a line
//     "B<count>", then per answer a line "O<id>:<bytes>" or
//     "F<id>:<bytes>" and those bytes, in the order the answers arrived.
//     A batch of calls written before one read crosses the boundary once,
//     each way.

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
	s.fileFrom = 0 // what followed the call moved
	return body, true
}

// Stdin is the guest's stdin for one run: the payload, then the replies
// to the run's host calls. It never reports io.EOF while a host call is
// waiting for its reply (the guest's C library would then refuse every
// later read); with no payload left and no call waiting, or once the
// run's context is done, it reports io.EOF.
type Stdin struct {
	payload *bytes.Reader
	stdout  *Stdout
	host    spi.Host
	starter spi.HostStarter
	ctx     context.Context
	reply   bytes.Reader
	body    bytes.Reader  // a file reply's body, read after reply
	files   *runfiles.Set // the run's files (files.go), or nil

	inflight int // calls started and not yet served
	mu       sync.Mutex
	arrived  []answer      // answers not yet served, in arrival order
	ready    chan struct{} // signalled (never blocking) when an answer arrives
}

// idCall is a call the guest made with an id.
type idCall struct {
	id   int64
	name string
	args json.RawMessage
}

// answer is the broker's answer to the guest's call id.
type answer struct {
	id   int64
	text []byte
	err  error
}

// NewStdin returns the stdin of a run whose payload is payload, whose
// stdout sink is stdout and whose host calls go to host with ctx (nil
// host: the run has none).
func NewStdin(ctx context.Context, payload []byte, stdout *Stdout, host spi.Host) *Stdin {
	s := &Stdin{payload: bytes.NewReader(payload), stdout: stdout, host: host, ctx: ctx, ready: make(chan struct{}, 1)}
	s.starter, _ = host.(spi.HostStarter)
	return s
}

// Read implements io.Reader.
func (s *Stdin) Read(p []byte) (int, error) {
	if s.payload.Len() > 0 {
		return s.payload.Read(p)
	}
	if s.reply.Len() > 0 {
		return s.reply.Read(p)
	}
	if s.body.Len() > 0 {
		return s.body.Read(p)
	}
	if s.files != nil {
		if head, body, ok := s.stdout.takeFile(s.files); ok {
			s.reply.Reset(head)
			s.body.Reset(body)
			return s.reply.Read(p)
		}
	}
	if s.host == nil {
		return 0, io.EOF
	}
	var calls []idCall
	for {
		body, ok := s.stdout.TakeHostCall()
		if !ok {
			break
		}
		name, args, id, err := decodeCall(body)
		switch {
		case err != nil && id < 0:
			s.reply.Reset(Reply(nil, err))
			return s.reply.Read(p)
		case id < 0: // one call at a time
			s.reply.Reset(Reply(s.host.Call(s.ctx, name, args)))
			return s.reply.Read(p)
		case err != nil:
			s.deliver(answer{id: id, err: err})
		default:
			calls = append(calls, idCall{id, name, args})
		}
		s.inflight++
	}
	if len(calls) == 1 && s.inflight == 1 {
		// The only call in flight: made on this goroutine (Call: no
		// hand-off), as the guest waits for it anyway.
		c := calls[0]
		text, err := s.host.Call(s.ctx, c.name, c.args)
		s.deliver(answer{id: c.id, text: text, err: err})
	} else {
		for _, c := range calls {
			s.start(c.id, c.name, c.args)
		}
	}
	if s.inflight == 0 {
		return 0, io.EOF
	}
	var stop <-chan struct{}
	if s.ctx != nil {
		stop = s.ctx.Done()
	}
	select {
	case <-s.ready:
	case <-stop:
		return 0, io.EOF
	}
	// Let the host functions that are running finish too, so that the
	// batch carries every answer ready by now, not just the first.
	runtime.Gosched()
	s.mu.Lock()
	served := s.arrived
	s.arrived = nil
	s.mu.Unlock()
	s.inflight -= len(served)
	s.reply.Reset(batch(served))
	return s.reply.Read(p)
}

// start issues call id: through the broker's Start, or, for a broker that
// cannot start calls, through Call on a goroutine of its own.
func (s *Stdin) start(id int64, name string, args json.RawMessage) {
	done := func(text json.RawMessage, err error) { s.deliver(answer{id: id, text: text, err: err}) }
	if s.starter != nil {
		s.starter.Start(s.ctx, name, args, done)
		return
	}
	go func() { done(s.host.Call(s.ctx, name, args)) }()
}

// deliver queues an answer for the next batch. It never blocks.
func (s *Stdin) deliver(a answer) {
	s.mu.Lock()
	s.arrived = append(s.arrived, a)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// decodeCall decodes a host-call body: [name, args] (id -1), or
// "<id>:<args>\n<name>" (args and name are JSON texts, which hold no raw
// newline; name is a string).
func decodeCall(body []byte) (name string, args json.RawMessage, id int64, err error) {
	if len(body) > 0 && body[0] == '[' {
		var rec []string
		if json.Unmarshal(body, &rec) != nil || len(rec) != 2 {
			return "", nil, -1, errMalformedCall
		}
		return rec[0], json.RawMessage(rec[1]), -1, nil
	}
	colon := bytes.IndexByte(body, ':')
	if colon < 1 || colon > maxCallID {
		return "", nil, -1, errMalformedCall
	}
	id, perr := strconv.ParseInt(string(body[:colon]), 10, 64)
	if perr != nil || id < 0 {
		return "", nil, -1, errMalformedCall
	}
	rest := body[colon+1:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return "", nil, id, errMalformedCall
	}
	if json.Unmarshal(rest[nl+1:], &name) != nil {
		return "", nil, id, errMalformedCall
	}
	return name, json.RawMessage(rest[:nl:nl]), id, nil
}

// maxCallID bounds the digits of a call's id.
const maxCallID = 15

type callError string

func (e callError) Error() string { return string(e) }

const errMalformedCall = callError("the guest's host-call record is malformed")

// batch is the bytes of a batch of replies on stdin, for calls made with
// an id: "B<count>\n", then per answer "O<id>:<bytes>\n" and the answer's
// JSON text, or "F<id>:<bytes>\n" and the failure's message.
func batch(answers []answer) []byte {
	n := 8
	for _, a := range answers {
		n += len(a.text) + 24
		if a.err != nil {
			n += len(a.err.Error())
		}
	}
	out := make([]byte, 0, n)
	out = append(out, 'B')
	out = strconv.AppendInt(out, int64(len(answers)), 10)
	out = append(out, '\n')
	for _, a := range answers {
		kind, body := byte('O'), a.text
		if a.err != nil {
			kind, body = 'F', []byte(a.err.Error())
		}
		out = append(out, kind)
		out = strconv.AppendInt(out, a.id, 10)
		out = append(out, ':')
		out = strconv.AppendInt(out, int64(len(body)), 10)
		out = append(out, '\n')
		out = append(out, body...)
	}
	return out
}

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
