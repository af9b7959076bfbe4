//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHarnessFaults: what goes wrong on a machine gives a message naming the component, the
// missing piece or the log, and never a hang.
func TestHarnessFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("missing Debian package", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := Start(ctx, Options{})
		wantErr(t, err, "etcd not found on PATH", "Debian package etcd-server", "hack/e2e/install.sh")
	})
	t.Run("binaries not built", func(t *testing.T) {
		_, err := Start(ctx, Options{BinDir: t.TempDir()})
		wantErr(t, err, "kube-apiserver missing", "hack/e2e/install.sh")
	})
	t.Run("port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		wantErr(t, checkPortFree("redis", l.Addr().(*net.TCPAddr).Port), "for redis is not free")
		// The note a hub leaves when it has to draw new ports names the holder.
		if who := portHolder(l.Addr().(*net.TCPAddr).Port); !strings.Contains(who, fmt.Sprintf("pid %d ", os.Getpid())) {
			t.Errorf("portHolder = %q, want this process (pid %d)", who, os.Getpid())
		}
	})
	t.Run("component fails to start", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte("kind: [not a plugin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := Start(ctx, Options{PluginConfigDir: dir, SkipSpokeCRDs: true})
		if h != nil {
			defer h.Stop()
		}
		wantErr(t, err, "argocd-cmp-server exited", "argocd-cmp-server.log")
	})
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}
