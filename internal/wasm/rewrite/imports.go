package rewrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Imports decodes only what a module imports: its import section, and
// the function types its imported functions name (indices into types).
// It reads the sections before the import section and stops after it,
// so a host can set up a module's imports while the module itself
// compiles. Decode checks the whole module; Imports checks what it reads.
func Imports(wasm []byte) (imports []Import, types []FuncType, err error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, nil, fmt.Errorf("%w: not a wasm binary", ErrMalformed)
	}
	if v := binary.LittleEndian.Uint32(wasm[4:8]); v != 1 {
		return nil, nil, fmt.Errorf("%w: binary version %d (a component, or a future format)", ErrUnsupported, v)
	}
	m := &Module{}
	top := &reader{b: wasm[8:], off: 8}
	for !top.done() {
		id := top.byte()
		sizeAt := top.off
		size := top.u32()
		start := top.off
		payload := top.bytes(size)
		if top.err != nil {
			return nil, nil, top.err
		}
		if id != secType && id != secImport {
			if id != secCustom && sectionRank[id] > sectionRank[secImport] {
				break // past the imports
			}
			continue
		}
		p := part{id: id, raw: payload, sizeWidth: start - sizeAt}
		if err := m.decodeSection(&p, &reader{b: payload, off: start}); err != nil {
			return nil, nil, fmt.Errorf("section %d: %w", id, err)
		}
		if id == secImport {
			break
		}
	}
	for i, im := range m.Imports {
		if im.Kind == KindFunc && im.Type >= uint32(len(m.Types)) {
			return nil, nil, fmt.Errorf("%w: import %d has type %d of %d", ErrMalformed, i, im.Type, len(m.Types))
		}
	}
	return m.Imports, m.Types, nil
}
