package rewrite

import (
	"errors"
	"testing"
)

// module wraps one function body (without locals) of type () -> () in a
// minimal module.
func module(body ...byte) []byte {
	code := append([]byte{0}, body...) // no locals
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, secType, 4, 1, 0x60, 0, 0)
	b = append(b, secFunction, 2, 1, 0)
	b = append(b, secMemory, 3, 1, 0, 1)
	codeSec := appendU32([]byte{1}, uint32(len(code)))
	codeSec = append(codeSec, code...)
	b = append(b, secCode)
	b = appendU32(b, uint32(len(codeSec)))
	return append(b, codeSec...)
}

// TestRefuses checks that what the rewriter does not understand is
// refused with an error naming it, never passed over.
func TestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm []byte
		want error
	}{
		{"simd", module(0xfd, 0x0c, 0, opEnd), ErrUnsupported},
		{"atomics", module(0xfe, 0x00, 0, 0, opEnd), ErrUnsupported},
		{"tail call", module(0x12, 0, opEnd), ErrUnsupported},
		{"exceptions", module(0x06, blockVoid, opEnd, opEnd), ErrUnsupported},
		{"unknown opcode", module(0xc5, opEnd), ErrUnsupported},
		{"multi-memory load", module(opI32Const, 0, 0x28, 0x42, 0, 0, opEnd), ErrUnsupported},
		{"truncated body", module(opBlock, blockVoid), ErrMalformed},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), ErrUnsupported},
		{"not wasm", []byte("hello, world"), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.wasm)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
		})
	}
	// The well-formed one decodes.
	if _, err := Decode(module(opEnd)); err != nil {
		t.Fatalf("Decode of an empty body: %v", err)
	}
	// A module rewritten once is refused a second time.
	m, err := Decode(guestWasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := Preempt(m); err != nil {
		t.Fatal(err)
	}
	again, err := Decode(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if err := Preempt(again); !errors.Is(err, errRewritten) {
		t.Fatalf("second Preempt = %v, want errRewritten", err)
	}
}
