// Command gen regenerates the argocd-cm kustomize component in
// manifests/argocd-cm from the health checks under lua/.
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
