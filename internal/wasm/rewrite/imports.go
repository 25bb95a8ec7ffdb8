package rewrite

import "fmt"

// Imports decodes only what a module imports: its import section, and
// the function types its imported functions name (indices into types).
// It reads the sections before the import section and stops after it,
// so a host can set up a module's imports while the module itself
// compiles. Decode checks the whole module; Imports checks what it reads.
func Imports(wasm []byte) (imports []Import, types []FuncType, err error) {
	top, err := sections(wasm)
	if err != nil {
		return nil, nil, err
	}
	m := &Module{}
	for !top.done() {
		p, r, err := nextSection(top)
		if err != nil {
			return nil, nil, err
		}
		if p.id != secType && p.id != secImport {
			if p.id != secCustom && sectionRank[p.id] > sectionRank[secImport] {
				break // past the imports
			}
			continue
		}
		if err := m.decodeSection(&p, r); err != nil {
			return nil, nil, fmt.Errorf("section %d: %w", p.id, err)
		}
		if p.id == secImport {
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
