package guest

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// WriteRecord is the guest side of the protocol, for a guest written in
// Go: it writes one framed record of kind k to w. A result, thrown or
// host-call record carries body, which must be well-formed UTF-8 (JSON text from
// encoding/json is), with its length in UTF-16 code units; every other
// kind ignores body. The body is written as given, not copied, so a large
// result costs no second buffer in the guest.
func WriteRecord(w io.Writer, n Nonce, k byte, body []byte) error {
	head := make([]byte, 0, len(FramePrefix)+len(n)+16)
	head = append(head, FramePrefix...)
	head = append(head, n...)
	head = append(head, k)
	if k != RecResult && k != RecThrew && k != RecHostCall && k != RecFile {
		head = append(head, '\n')
		_, err := w.Write(head)
		return err
	}
	head = strconv.AppendInt(head, int64(utf16Units(body)), 10)
	head = append(head, '\n')
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	end := make([]byte, 0, len(FramePrefix)+len(n)+2)
	end = append(end, FramePrefix...)
	end = append(end, n...)
	end = append(end, "E\n"...)
	_, err := w.Write(end)
	return err
}

// utf16Units counts the UTF-16 code units of b's characters (an invalid
// byte counts as one, the U+FFFD it stands for).
func utf16Units(b []byte) int {
	units := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			units++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return units
}
