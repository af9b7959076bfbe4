package main

import (
	"os"
	"testing"
)

// testImage is the agent image an install sets on the spokeforge sidecar
// (SPOKEFORGE_IMAGE), the one the golden renders carry.
const testImage = "ghcr.io/spokeforge/spokeforge:v0.1.0-dev"

// TestMain gives the commands the tests run through Main (render, validate)
// the sidecar's environment, as manifests/cmp sets it.
func TestMain(m *testing.M) {
	if os.Getenv("SPOKEFORGE_IMAGE") == "" {
		os.Setenv("SPOKEFORGE_IMAGE", testImage)
	}
	os.Exit(m.Run())
}
