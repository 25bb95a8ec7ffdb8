//go:build !linux

package python

// KernelBounds reports that runs get no cgroup: the backend needs Linux.
func KernelBounds() error { return errNotLinux }
