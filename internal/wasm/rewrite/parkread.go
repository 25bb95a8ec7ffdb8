package rewrite

import "errors"

// The park-read pass.
//
// ParkRead wraps the module's import of WASI's fd_read in a function that
// calls it again, with the same arguments, for as long as it returns
// ParkRetry:
//
//	func park_read(fd, iovs, iovsLen, nread i32) i32 {
//		loop { r = fd_read(fd, iovs, iovsLen, nread); br_if (r == ParkRetry) }
//		return r
//	}
//
// and makes every use of the import (calls, ref.func, element segments,
// exports, the start function) use the wrapper instead. A WASI host never
// returns ParkRetry (an errno is 16 bits), so the module behaves as
// before; a host that parks an instance inside fd_read and resumes it by
// restoring a snapshot of that call (wazero's experimental Snapshotter)
// restores with ParkRetry, and the wrapper's second call of fd_read is a
// host call at the same point of the guest, where the host can take the
// snapshot of the next run: a snapshot is then restored only once, which
// is all wazero's public API promises.

// What the park-read pass wraps.
const (
	ParkReadModule = "wasi_snapshot_preview1"
	ParkReadName   = "fd_read"
)

// ParkRetry is the result with which a host restores a snapshot taken in
// fd_read, so that the wrapper calls fd_read again. It is no WASI errno.
const ParkRetry uint32 = 0x7061726b // "park"

// ParkReadVersion names the park-read pass's output (see PreemptVersion).
const ParkReadVersion = "park-read-1"

// ParkReadPass is ParkRead as a Pass.
var ParkReadPass = Pass{Name: ParkReadVersion, Apply: ParkRead}

// ParkReadWrapperName is the wrapper's name in the name section.
const ParkReadWrapperName = "sandbank.park_read"

// errParkReadType is returned for an fd_read import of another type.
var errParkReadType = errors.New("rewrite: the module imports " + ParkReadModule + "." + ParkReadName + " with a type other than (i32, i32, i32, i32) -> i32")

// ParkRead applies the park-read pass to m. A module that does not import
// fd_read is left as it is; one that imports it with another type is
// refused.
func ParkRead(m *Module) error {
	readType := FuncType{Params: []byte{I32, I32, I32, I32}, Results: []byte{I32}}
	var reads []uint32 // the function indices of the fd_read imports
	var fn uint32
	for _, im := range m.Imports {
		if im.Kind != KindFunc {
			continue
		}
		if im.Module == ParkReadModule && im.Name == ParkReadName {
			if !m.Types[im.Type].equal(readType) {
				return errParkReadType
			}
			reads = append(reads, fn)
		}
		fn++
	}
	if len(reads) == 0 {
		return nil
	}
	// The k-th import's wrapper is the k-th function added after the
	// defined ones.
	first := fn + uint32(len(m.Funcs))
	err := redirectFuncs(m, func(i uint32) uint32 {
		for k, r := range reads {
			if i == r {
				return first + uint32(k)
			}
		}
		return i
	}, true)
	if err != nil {
		return err
	}
	t := m.addType(readType)
	for k, r := range reads {
		m.Funcs = append(m.Funcs, t)
		m.Code = append(m.Code, Body{Locals: []Locals{{Count: 1, Type: I32}}, Code: parkReadBody(r)})
		m.nameFunc(first+uint32(k), ParkReadWrapperName)
	}
	return nil
}

// parkReadBody is the wrapper's body: parameters 0 to 3, local 4 the
// result.
func parkReadBody(read uint32) []byte {
	out := []byte{opLoop, blockVoid}
	for l := uint32(0); l < 4; l++ {
		out = op(out, opLocalGet, l)
	}
	out = op(out, opCall, read)
	out = op(out, opLocalTee, 4)
	out = i32c(out, int64(int32(ParkRetry)))
	out = append(out, 0x46) // i32.eq
	out = op(out, opBrIf, 0)
	out = append(out, opEnd)
	out = op(out, opLocalGet, 4)
	return append(out, opEnd)
}

// nameFunc names function index i in the name section, when the module
// has function names; i must be above every index named so far.
func (m *Module) nameFunc(i uint32, name string) {
	if m.Names == nil {
		return
	}
	for k := range m.Names.Subsections {
		if s := &m.Names.Subsections[k]; s.ID == 1 {
			s.Map = append(s.Map, NameAssoc{Index: i, Name: name})
		}
	}
}
