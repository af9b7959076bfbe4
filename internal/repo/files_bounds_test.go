package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReadDirBounded: a directory is listed sorted, and one with more
// entries than the bound is refused instead of listed whole.
func TestReadDirBounded(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2500; i++ {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	es, err := readDir(dir, 2500)
	if err != nil || len(es) != 2500 || es[0].Name() != "f0" || es[1].Name() != "f1" || es[2].Name() != "f10" {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	if _, err := readDir(dir, 2499); !errors.Is(err, errTooMany) {
		t.Fatalf("past the bound: %v", err)
	}
}
