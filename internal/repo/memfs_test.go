package repo

import (
	"testing"
	"testing/fstest"
)

func TestMemFS(t *testing.T) {
	files := map[string][]byte{
		"clusters/a/cluster.yaml": []byte("a"), "clusters/b/cluster.yaml": []byte("bb"),
		"orgs/x.yaml": []byte("x"), "products/x/p.yaml": []byte("p"),
	}
	if err := fstest.TestFS(NewMemFS(files), "clusters/a/cluster.yaml", "clusters/b/cluster.yaml", "orgs/x.yaml", "products/x/p.yaml"); err != nil {
		t.Fatal(err)
	}
}
