// Package cgroup gives each sandboxed run its own Linux control group: a
// memory limit that counts every page the run's processes cause the
// kernel to hold (anonymous memory, shared memory, message queues, memfd
// files, tmpfs files and their inodes, thread stacks, page tables), a
// bound on its tasks (pids.max: threads and processes, which
// RLIMIT_NPROC does not bound for root), and the kernel's own record of
// what happened (memory events and peak), read from outside the run.
//
// It supports cgroup v2 (memory.max, memory.swap.max, memory.oom.group,
// pids.max, memory.events, memory.peak; a child is placed atomically with
// CLONE_INTO_CGROUP) and cgroup v1's memory and pids hierarchies
// (memory.limit_in_bytes, memory.memsw.limit_in_bytes, pids.max,
// memory.oom_control, memory.failcnt, memory.max_usage_in_bytes; a child
// is placed by forking it from a thread moved into the group first).
//
// [Open] finds where this process may create groups: as root, or inside
// a delegated v2 subtree (a systemd service with Delegate=yes and
// DelegateSubgroup=, see docs/design.md). Where it may not, Open's error
// says why, and callers must not claim the bounds this package gives.
//
// # Security considerations
//
// The run never writes to its group: the group's files are outside its
// mount namespace, and the host reads the events after the run has
// ended. A group is removed after its run, its remaining processes
// killed first.
package cgroup
