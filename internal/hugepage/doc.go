// Package hugepage allocates the few large buffers a process fills once
// and keeps (a parked instance's memory at its park point, a guest
// module read from the cache) so that the kernel may back them with
// transparent huge pages. It is for the wasm engines' start-up path:
// on a virtual machine a fresh 4 KiB page can cost tens of microseconds
// to fault in, and a process's first run faults in thousands.
package hugepage
