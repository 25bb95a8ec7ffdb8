//go:build linux

package python

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Available reports, without starting anything, whether New(opts) may
// succeed on this machine: bubblewrap and an interpreter are installed and
// the kernel allows user namespaces. A nil error is no promise (New runs
// a script in the sandbox to be sure); an error names what is missing.
// Package builtin registers the engine only when it is nil.
func Available(opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	if _, _, err := tools(o); err != nil {
		return err
	}
	if n, ok := readProcInt("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		return fmt.Errorf("python: the kernel allows no user namespaces (/proc/sys/user/max_user_namespaces is 0)")
	}
	if os.Geteuid() != 0 {
		if n, ok := readProcInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
			return fmt.Errorf("python: the kernel refuses user namespaces to unprivileged users (/proc/sys/kernel/unprivileged_userns_clone is 0)")
		}
		if n, ok := readProcInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n != 0 {
			return fmt.Errorf("python: AppArmor refuses user namespaces to unprivileged users (/proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1)")
		}
	}
	return nil
}

func readProcInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
