// Command gen copies into each health check under lua/ the helpers of lua/_lib/sfcore.lua it
// uses, then regenerates the argocd-cm kustomize component in manifests/argocd-cm from them,
// each script minified (lua.Minify) in it.
//
// Run from the repository root:
//
//	go run ./lua/gen
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	sflua "github.com/spokeforge/spokeforge/lua"
)

func main() {
	src := flag.String("lua", "lua", "directory holding <group>/<Kind>/health.lua")
	out := flag.String("out", filepath.Join("manifests", "argocd-cm"), "output directory")
	flag.Parse()

	scripts, err := sflua.LoadScripts(*src)
	if err != nil {
		log.Fatal(err)
	}
	lib, err := os.ReadFile(filepath.Join(*src, "_lib", "sfcore.lua"))
	if err != nil {
		log.Fatal(err)
	}
	for i, s := range scripts {
		synced, err := sflua.SyncLib(string(lib), s.Source)
		if err != nil {
			log.Fatalf("%s: %v", s.Dir, err)
		}
		if synced != s.Source {
			path := filepath.Join(s.Dir, "health.lua")
			if err := os.WriteFile(path, []byte(synced), 0o644); err != nil {
				log.Fatal(err)
			}
			log.Printf("wrote %s", path)
			scripts[i].Source = synced
		}
	}
	files, err := sflua.RenderComponent(scripts)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s", filepath.Join(*out, name))
	}
}
