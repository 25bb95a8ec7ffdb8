package rewrite

// Encode writes the module in the binary format: the decoded sections
// from their fields, every other section as it came, each in its place.
// A section the fields need but the module lacked is added in its place
// in the section order.
func (m *Module) Encode() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	written := map[byte]bool{}
	emit := func(id byte, payload []byte, width int) {
		out = append(out, id)
		out = appendU32Width(out, uint32(len(payload)), width)
		out = append(out, payload...)
	}
	// missing writes the sections the fields need that rank before rank
	// and are not in the binary.
	missing := func(rank int) {
		for _, id := range []byte{secType, secImport, secFunction, secGlobal, secExport, secStart, secElement, secCode} {
			if sectionRank[id] < rank && !written[id] && m.needs(id) {
				written[id] = true
				emit(id, m.encodeSection(id), 0)
			}
		}
	}
	for _, p := range m.parts {
		if p.drop {
			continue
		}
		if p.id == secCustom {
			if p.name == "name" && m.Names != nil {
				emit(secCustom, append(appendName(nil, "name"), m.Names.encode()...), p.sizeWidth)
				continue
			}
			emit(secCustom, p.raw, p.sizeWidth)
			continue
		}
		missing(sectionRank[p.id])
		written[p.id] = true
		if payload := m.encodeSection(p.id); payload != nil {
			emit(p.id, payload, p.sizeWidth)
		} else {
			emit(p.id, p.raw, p.sizeWidth)
		}
	}
	missing(1 << 30)
	return out
}

// needs reports whether section id has contents to write.
func (m *Module) needs(id byte) bool {
	switch id {
	case secType:
		return len(m.Types) > 0
	case secImport:
		return len(m.Imports) > 0
	case secFunction, secCode:
		return len(m.Funcs) > 0
	case secGlobal:
		return len(m.Globals) > 0
	case secExport:
		return len(m.Exports) > 0
	case secStart:
		return m.Start != nil
	case secElement:
		return len(m.Elements) > 0
	}
	return false
}

// encodeSection returns the payload of a decoded section, or nil for a
// section that is written back raw.
func (m *Module) encodeSection(id byte) []byte {
	var b []byte
	switch id {
	case secType:
		b = appendU32(b, uint32(len(m.Types)))
		for _, t := range m.Types {
			b = append(b, 0x60)
			b = appendU32(b, uint32(len(t.Params)))
			b = append(b, t.Params...)
			b = appendU32(b, uint32(len(t.Results)))
			b = append(b, t.Results...)
		}
	case secImport:
		b = appendU32(b, uint32(len(m.Imports)))
		for _, im := range m.Imports {
			b = appendName(b, im.Module)
			b = appendName(b, im.Name)
			b = append(b, im.Kind)
			if im.Kind == KindFunc {
				b = appendU32(b, im.Type)
			} else {
				b = append(b, im.Desc...)
			}
		}
	case secFunction:
		b = appendU32(b, uint32(len(m.Funcs)))
		for _, t := range m.Funcs {
			b = appendU32(b, t)
		}
	case secGlobal:
		b = appendU32(b, uint32(len(m.Globals)))
		for _, g := range m.Globals {
			b = append(b, g.Type)
			if g.Mutable {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
			b = append(b, g.Init...)
		}
	case secExport:
		b = appendU32(b, uint32(len(m.Exports)))
		for _, e := range m.Exports {
			b = appendName(b, e.Name)
			b = append(b, e.Kind)
			b = appendU32(b, e.Index)
		}
	case secMemory:
		if !m.memoryEdited {
			return nil
		}
		b = appendU32(b, uint32(len(m.Memories)))
		for _, mem := range m.Memories {
			if mem.HasMax {
				b = appendU32(append(b, 1), mem.Min)
				b = appendU32(b, mem.Max)
			} else {
				b = appendU32(append(b, 0), mem.Min)
			}
		}
	case secStart:
		if m.Start == nil {
			return nil
		}
		b = appendU32(b, *m.Start)
	case secElement:
		b = appendU32(b, uint32(len(m.Elements)))
		for _, e := range m.Elements {
			b = e.encode(b)
		}
	case secCode:
		b = appendU32(b, uint32(len(m.Code)))
		for _, body := range m.Code {
			var fb []byte
			fb = appendU32(fb, uint32(len(body.Locals)))
			for _, l := range body.Locals {
				fb = appendU32(fb, l.Count)
				fb = append(fb, l.Type)
			}
			fb = append(fb, body.Code...)
			b = appendU32(b, uint32(len(fb)))
			b = append(b, fb...)
		}
	default:
		return nil
	}
	return b
}

func (e Element) encode(b []byte) []byte {
	b = appendU32(b, e.Flags)
	if e.Flags&1 == 0 {
		if e.Flags&2 != 0 {
			b = appendU32(b, e.Table)
		}
		b = append(b, e.Offset...)
	}
	if e.Flags&3 != 0 {
		b = append(b, e.Kind)
	}
	if e.Flags&4 != 0 {
		b = appendU32(b, uint32(len(e.Exprs)))
		for _, x := range e.Exprs {
			b = append(b, x...)
		}
		return b
	}
	b = appendU32(b, uint32(len(e.Funcs)))
	for _, f := range e.Funcs {
		b = appendU32(b, f)
	}
	return b
}

func (n *Names) encode() []byte {
	var b []byte
	for _, s := range n.Subsections {
		var sb []byte
		switch s.ID {
		case 1:
			sb = appendU32(sb, uint32(len(s.Map)))
			for _, a := range s.Map {
				sb = appendU32(sb, a.Index)
				sb = appendName(sb, a.Name)
			}
		case 2:
			sb = appendU32(sb, uint32(len(s.Indirect)))
			for _, a := range s.Indirect {
				sb = appendU32(sb, a.Index)
				sb = append(sb, a.Raw...)
			}
		default:
			sb = s.Raw
		}
		b = append(b, s.ID)
		b = appendU32Width(b, uint32(len(sb)), s.sizeWidth)
		b = append(b, sb...)
	}
	return b
}
