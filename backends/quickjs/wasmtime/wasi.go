//go:build cgo

package wasmtime

import (
	"encoding/binary"
	"io"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// WASI errno values the shadowed functions return.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNotsup  = 58
)

const wasiModule = "wasi_snapshot_preview1"

// newLinker defines wasmtime's WASI and shadows the functions through
// which the guest would see the host or grow it: the clock (a fake clock,
// the same as the wazero backend's), poll_oneoff (no sleeping on the
// host), and the standard streams (stdin from the run's payload, stdout
// and stderr into the run's bounded buffers; the binding can only point
// them at files), and it defines the stack pass's stackOverflow. The module imports no random_get: QuickJS-NG seeds
// Math.random from the clock, which is fake. Every shadow finds its run
// through the store's data.
func newLinker(eng *wt.Engine) (*wt.Linker, error) {
	l := wt.NewLinker(eng)
	if err := l.DefineWasi(); err != nil {
		return nil, err
	}
	l.AllowShadowing(true)
	defs := []struct {
		name string
		fn   any
	}{
		{"clock_time_get", clockTimeGet},
		{"clock_res_get", clockResGet},
		{"poll_oneoff", pollOneoff},
		{"fd_write", fdWrite},
		{"fd_read", fdRead},
	}
	for _, d := range defs {
		if err := l.FuncWrap(wasiModule, d.name, d.fn); err != nil {
			return nil, err
		}
	}
	if err := l.FuncWrap(wasmrewrite.PreemptModule, wasmrewrite.StackOverflowName, stackOverflow); err != nil {
		return nil, err
	}
	return l, nil
}

// memory returns the guest's linear memory as a slice, valid until the
// guest runs again.
func memory(c *wt.Caller) []byte {
	ext := c.GetExport("memory")
	if ext == nil || ext.Memory() == nil {
		return nil
	}
	return ext.Memory().UnsafeData(c)
}

func runOf(c *wt.Caller) *run { r, _ := c.Data().(*run); return r }

// clockTimeGet reads the run's fake clocks: the wall clock starts at
// 2000-01-01T00:00:00Z and the monotonic and CPU clocks at zero, and each
// advances one millisecond per reading.
func clockTimeGet(c *wt.Caller, id int32, _ int64, out int32) int32 {
	r := runOf(c)
	var v int64
	switch id {
	case 0: // realtime
		v = fakeEpoch + r.clockReads.Add(1)*int64(time.Millisecond) - int64(time.Millisecond)
	case 1, 2, 3: // monotonic, process and thread CPU time
		v = r.monoReads.Add(1)*int64(time.Millisecond) - int64(time.Millisecond)
	default:
		return errnoInval
	}
	return putU64(memory(c), out, uint64(v))
}

func clockResGet(c *wt.Caller, id int32, out int32) int32 {
	if id < 0 || id > 3 {
		return errnoInval
	}
	return putU64(memory(c), out, uint64(time.Millisecond))
}

// pollOneoff refuses: sleeping would hold a host thread, and nothing the
// wrapper does waits on a descriptor.
func pollOneoff(*wt.Caller, int32, int32, int32, int32) int32 { return errnoNotsup }

func fdWrite(c *wt.Caller, fd, iovs, iovsLen, nwritten int32) int32 {
	r := runOf(c)
	var w io.Writer
	switch fd {
	case 1:
		w = r.SeeWrites(r.stdout, r.b.beforeWrite)
	case 2:
		w = r.stderrW
	default:
		return errnoBadf
	}
	mem := memory(c)
	var total uint32
	for i := int32(0); i < iovsLen; i++ {
		buf, ok := iovec(mem, iovs, i)
		if !ok {
			return errnoFault
		}
		// The sinks copy what they keep: the slice aliases guest memory.
		_, _ = w.Write(buf)
		total += uint32(len(buf))
	}
	return putU32(mem, nwritten, total)
}

func fdRead(c *wt.Caller, fd, iovs, iovsLen, nread int32) int32 {
	if fd != 0 {
		return errnoBadf
	}
	r := runOf(c)
	r.inputStarts()
	mem := memory(c)
	var total uint32
	for i := int32(0); i < iovsLen; i++ {
		buf, ok := iovec(mem, iovs, i)
		if !ok {
			return errnoFault
		}
		n, _ := r.stdin.Read(buf)
		total += uint32(n)
		if n < len(buf) {
			break
		}
	}
	return putU32(mem, nread, total)
}

// iovec returns the i-th buffer of the iovec array at iovs.
func iovec(mem []byte, iovs, i int32) ([]byte, bool) {
	at := int64(uint32(iovs)) + 8*int64(i)
	if at+8 > int64(len(mem)) {
		return nil, false
	}
	ptr := int64(binary.LittleEndian.Uint32(mem[at:]))
	n := int64(binary.LittleEndian.Uint32(mem[at+4:]))
	if ptr+n > int64(len(mem)) {
		return nil, false
	}
	return mem[ptr : ptr+n : ptr+n], true
}

// putU32 and putU64 write v little-endian at at in mem, and return the
// errno.
func putU32(mem []byte, at int32, v uint32) int32 {
	return put(mem, at, binary.LittleEndian.AppendUint32(make([]byte, 0, 8), v))
}

func putU64(mem []byte, at int32, v uint64) int32 {
	return put(mem, at, binary.LittleEndian.AppendUint64(make([]byte, 0, 8), v))
}

// put copies b into mem at at: errnoFault when it does not fit.
func put(mem []byte, at int32, b []byte) int32 {
	a := int64(uint32(at))
	if a+int64(len(b)) > int64(len(mem)) {
		return errnoFault
	}
	copy(mem[a:], b)
	return errnoSuccess
}

// fakeEpoch is what the script's wall clock reads first:
// 2000-01-01T00:00:00Z, far from any host time.
const fakeEpoch = int64(946684800) * int64(time.Second)
