package quickjs

import (
	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/park"
)

// Parked mode's WASI: internal/wasm/park's fd_read (the park point, then
// the run's stdin) and proc_exit (the end of a run, and the next park),
// and ENOSYS for every import outside the expected set.

// expectedWASI are the WASI functions a run may call besides fd_read and
// proc_exit, served by wazero's own implementation: none of them changes
// state that a restore does not reset (fd_write goes to the run's own
// buffers, the clocks and the random source are reset on restore).
var expectedWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true, "sched_yield": true,
	"fd_fdstat_get": true, "fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_write": true,
}

// parkedWASI is parked mode's host module wasi_snapshot_preview1.
var parkedWASI = park.WASI[*instance, *job, jsguest.Facts]{Expected: expectedWASI}
