//go:build cgo

package wasmtime

// This file is the one place that reaches past the Go binding into
// wasmtime's public C API: wasmtime-go v39 does not expose the epoch
// deadline callback (wasmtime_store_epoch_deadline_callback, declared in
// wasmtime/store.h), without which an epoch deadline either kills every
// run at once or none. The declarations below are copied by hand from that
// header (they cannot include it: the header lives in the binding's module
// directory); TestInterruptABI compares them with the header of the
// binding in use and fails loudly when an upgrade changes them.

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_error wasmtime_error_t;
typedef uint8_t wasmtime_update_deadline_kind_t;

extern wasmtime_error_t *wasmtime_error_new(const char *);
extern void wasmtime_store_epoch_deadline_callback(
    wasmtime_store_t *store,
    wasmtime_error_t *(*func)(wasmtime_context_t *context, void *data,
                              uint64_t *epoch_deadline_delta,
                              wasmtime_update_deadline_kind_t *update_kind),
    void *data, void (*finalizer)(void *));

// sbk_epoch runs on the guest's thread whenever the engine's epoch passes
// the store's deadline: it stops the guest when the run's flag is set, and
// otherwise lets it go on until the next epoch.
static wasmtime_error_t *sbk_epoch(wasmtime_context_t *context, void *data,
                                   uint64_t *delta,
                                   wasmtime_update_deadline_kind_t *kind) {
  (void)context;
  if (__atomic_load_n((int32_t *)data, __ATOMIC_ACQUIRE) != 0) {
    return wasmtime_error_new("sandbank: run interrupted by the host");
  }
  *delta = 1;
  *kind = 0; // WASMTIME_UPDATE_DEADLINE_CONTINUE
  return NULL;
}

static void sbk_install(void *store, int32_t *flag) {
  wasmtime_store_epoch_deadline_callback((wasmtime_store_t *)store, sbk_epoch, flag, NULL);
}
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	wt "github.com/bytecodealliance/wasmtime-go/v39"
)

// interruptMessage is the error text the callback stops a guest with.
const interruptMessage = "sandbank: run interrupted by the host"

// stopFlag is one run's stop request, in C memory so that the callback
// can read it without touching Go memory. It is set from any goroutine and
// freed once the run's store is closed.
type stopFlag struct {
	mu   sync.Mutex
	p    *C.int32_t    // nil once freed
	done chan struct{} // closed by free
	eng  *wt.Engine
	once sync.Once
}

func newStopFlag(eng *wt.Engine) *stopFlag {
	return &stopFlag{
		p:    (*C.int32_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int32_t(0))))),
		done: make(chan struct{}),
		eng:  eng,
	}
}

// nudgeEvery is how often the epoch is advanced again while a stop is
// pending.
const nudgeEvery = time.Millisecond

// set asks the guest to stop at its next epoch check, and advances the
// engine's epoch so that every running guest checks now. Only the run
// whose flag is set stops; the others renew their deadline and go on.
// Until the run's store is closed, the epoch is advanced again every
// millisecond: on a weakly ordered CPU the guest may see the new epoch
// before the flag, renew its deadline, and would otherwise never look
// again.
func (f *stopFlag) set() {
	f.once.Do(func() {
		f.mu.Lock()
		freed := f.p == nil
		if !freed {
			atomic.StoreInt32((*int32)(unsafe.Pointer(f.p)), 1)
		}
		f.mu.Unlock()
		if freed {
			return
		}
		f.eng.IncrementEpoch()
		go f.nudge()
	})
}

// nudge advances the epoch every nudgeEvery until free.
func (f *stopFlag) nudge() {
	t := time.NewTicker(nudgeEvery)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-t.C:
			f.eng.IncrementEpoch()
		}
	}
}

// install arms the flag on store: its guest checks the flag at every
// epoch. The store must outlive no call to free.
func (f *stopFlag) install(store *wt.Store) {
	C.sbk_install(storePointer(store), f.p)
	store.SetEpochDeadline(1)
}

// free releases the C memory and ends the nudging; the store that read
// the flag must be closed.
func (f *stopFlag) free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.p != nil {
		C.free(unsafe.Pointer(f.p))
		f.p = nil
		close(f.done)
	}
}

// storePointer returns the wasmtime_store_t* a *wt.Store wraps: its first
// field (TestInterruptABI checks the binding's layout).
func storePointer(s *wt.Store) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(s))
}
