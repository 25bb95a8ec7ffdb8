package guest

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// ErrNoReply is returned by ReadReply when stdin does not hold a
// well-formed reply: the host stopped serving the run (its stdin ended) or
// a host bug.
var ErrNoReply = errors.New("guest: no host-call reply on stdin")

// maxReplyHeader bounds a reply's first line: the kind and a length.
const maxReplyHeader = 16

// ReadReply is the guest side of a host call's reply, for a guest written
// in Go that wrote a host-call record with WriteRecord: it reads the reply
// ([Reply]) from r, the guest's stdin after the payload, and returns the
// answer's JSON text, or failed and the failure's message. It reads
// exactly the reply's bytes, so that r serves the next call's reply.
func ReadReply(r *bufio.Reader) (body []byte, failed bool, err error) {
	var head []byte
	for len(head) <= maxReplyHeader {
		c, err := r.ReadByte()
		if err != nil {
			return nil, false, ErrNoReply
		}
		if c == '\n' {
			break
		}
		head = append(head, c)
	}
	if len(head) < 2 || len(head) > maxReplyHeader || (head[0] != 'O' && head[0] != 'F') {
		return nil, false, ErrNoReply
	}
	n, perr := strconv.Atoi(string(head[1:]))
	if perr != nil || n < 0 {
		return nil, false, ErrNoReply
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, false, ErrNoReply
	}
	return body, head[0] == 'F', nil
}
