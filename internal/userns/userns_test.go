package userns

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settings writes the given /proc/sys settings under a new directory and
// returns it.
func settings(t *testing.T, values map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range values {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(v+"\n"), 0o644))
	}
	return dir
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name         string
		values       map[string]string
		unprivileged bool
		want         string // "" for nil
	}{
		{name: "no settings", unprivileged: true},
		{name: "all allow", unprivileged: true, values: map[string]string{maxUserNamespaces: "63000", unprivilegedClone: "1", apparmorRestrict: "0"}},
		{name: "no user namespaces", unprivileged: true, values: map[string]string{maxUserNamespaces: "0"},
			want: "the kernel allows no user namespaces (/proc/sys/user/max_user_namespaces is 0)"},
		{name: "no user namespaces, root", values: map[string]string{maxUserNamespaces: "0"},
			want: "the kernel allows no user namespaces (/proc/sys/user/max_user_namespaces is 0)"},
		{name: "clone refused", unprivileged: true, values: map[string]string{unprivilegedClone: "0"},
			want: "the kernel refuses user namespaces to unprivileged users (/proc/sys/kernel/unprivileged_userns_clone is 0)"},
		{name: "clone refused, root", values: map[string]string{unprivilegedClone: "0"}},
		{name: "apparmor restricts", unprivileged: true, values: map[string]string{apparmorRestrict: "1"},
			want: "AppArmor refuses user namespaces to unprivileged users (/proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1)"},
		{name: "apparmor restricts, root", values: map[string]string{apparmorRestrict: "1"}},
		{name: "not an integer", unprivileged: true, values: map[string]string{maxUserNamespaces: "none", unprivilegedClone: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(settings(t, tc.values), tc.unprivileged)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}
