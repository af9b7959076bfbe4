package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "clusters", "a")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "clusters", "b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("ok"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub", "real.yaml"), []byte("inner"), 0o644))
	must(os.WriteFile(filepath.Join(root, "clusters", "b", "cluster.yaml"), []byte("sibling"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big.yaml"), make([]byte, 65), 0o644))
	must(os.Symlink("sub/real.yaml", filepath.Join(dir, "inside.yaml")))
	must(os.Symlink("../b/cluster.yaml", filepath.Join(dir, "sibling.yaml")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")))
	must(os.Symlink("/etc/hostname", filepath.Join(dir, "etc.yaml")))
	must(os.Symlink("nowhere.yaml", filepath.Join(dir, "dangling.yaml")))
	must(os.Symlink("loop.yaml", filepath.Join(dir, "loop.yaml")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644))
	tests := []struct {
		name, want string
		data       string
		missing    bool
	}{
		{name: "cluster.yaml", data: "ok"},
		{name: "inside.yaml", data: "inner"},
		{name: "sub/real.yaml", data: "inner"},
		{name: "sibling.yaml", want: "leaves its directory"},
		{name: "zero.yaml", want: "leaves its directory"},
		{name: "etc.yaml", want: "leaves its directory"},
		{name: "dangling.yaml", want: "missing file or a loop"},
		{name: "loop.yaml", want: "missing file or a loop"},
		{name: "fifo.yaml", want: "a named pipe"},
		{name: "sub", want: "a directory"},
		{name: "big.yaml", want: "at most 64"},
		{name: "absent.yaml", missing: true},
		{name: "../b/cluster.yaml", want: "not a path inside"},
		{name: "/etc/hostname", want: "not a path inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Read(dir, tt.name, 64)
			switch {
			case tt.missing:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("want not-exist, got %v", err)
				}
			case tt.want == "":
				if err != nil || string(b) != tt.data {
					t.Fatalf("got %q, %v; want %q", b, err, tt.data)
				}
			default:
				var re *RefusedError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) || b != nil {
					t.Fatalf("got %q, %v; want a refusal containing %q", b, err, tt.want)
				}
			}
		})
	}
}

func TestReadTree(t *testing.T) {
	lim := Limits{FileBytes: 10, TotalBytes: 15, Files: 3}
	tests := []struct {
		name  string
		setup func(dir string) error
		want  string // "" means success
		files int
	}{
		{"regular files, dot directories skipped", func(d string) error {
			_ = os.MkdirAll(filepath.Join(d, ".git"), 0o755)
			_ = os.WriteFile(filepath.Join(d, ".git", "HEAD"), []byte("0123456789"), 0o644)
			return os.WriteFile(filepath.Join(d, "a.yaml"), []byte("a"), 0o644)
		}, "", 1},
		{"too many files", func(d string) error {
			for _, n := range []string{"a", "b", "c", "d"} {
				if err := os.WriteFile(filepath.Join(d, n), []byte("x"), 0o644); err != nil {
					return err
				}
			}
			return nil
		}, "limit of 3 files", 0},
		{"too many bytes", func(d string) error {
			_ = os.WriteFile(filepath.Join(d, "a"), []byte("0123456789"), 0o644)
			return os.WriteFile(filepath.Join(d, "b"), []byte("0123456789"), 0o644)
		}, "past 15 bytes", 0},
		{"symlinked directory", func(d string) error { return os.Symlink("/etc", filepath.Join(d, "etc")) }, "symlink to a directory", 0},
		{"device", func(d string) error { return os.Symlink("/dev/zero", filepath.Join(d, "z")) }, "leaves its directory", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			files, err := ReadTree(dir, lim)
			if tt.want == "" {
				if err != nil || len(files) != tt.files {
					t.Fatalf("got %d files, %v", len(files), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want %q", err, tt.want)
			}
		})
	}
}
