// Package userns says whether the kernel lets this process create user
// namespaces, from the settings under /proc/sys, without trying to make
// one. The engines that confine a run in namespaces call it from their
// Available, and prefix its error with their package name.
package userns

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The settings Check reads, under /proc/sys.
const (
	maxUserNamespaces = "user/max_user_namespaces"
	unprivilegedClone = "kernel/unprivileged_userns_clone"
	apparmorRestrict  = "kernel/apparmor_restrict_unprivileged_userns"
)

// Check reports whether the kernel's settings let this process create
// user namespaces: nil if none forbids it (no promise: the kernel may
// still refuse), else an error naming the setting that does, without a
// package prefix. It always reads /proc/sys/user/max_user_namespaces;
// when unprivileged (the process is not root), also the settings that
// refuse user namespaces to unprivileged users (Debian's
// unprivileged_userns_clone, Ubuntu's AppArmor restriction). A setting
// that is missing or unreadable forbids nothing.
func Check(unprivileged bool) error {
	return check("/proc/sys", unprivileged)
}

// check is Check with the settings read under dir.
func check(dir string, unprivileged bool) error {
	if n, ok := readInt(filepath.Join(dir, maxUserNamespaces)); ok && n == 0 {
		return errors.New("the kernel allows no user namespaces (/proc/sys/" + maxUserNamespaces + " is 0)")
	}
	if !unprivileged {
		return nil
	}
	if n, ok := readInt(filepath.Join(dir, unprivilegedClone)); ok && n == 0 {
		return errors.New("the kernel refuses user namespaces to unprivileged users (/proc/sys/" + unprivilegedClone + " is 0)")
	}
	if n, ok := readInt(filepath.Join(dir, apparmorRestrict)); ok && n != 0 {
		return errors.New("AppArmor refuses user namespaces to unprivileged users (/proc/sys/" + apparmorRestrict + " is 1)")
	}
	return nil
}

// readInt reads a setting's integer; false if the file is missing,
// unreadable or holds no integer. The files are the kernel's own and
// small, so reading one whole is bounded.
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
