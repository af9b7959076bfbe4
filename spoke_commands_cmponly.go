//go:build cmponly

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// spokeCommands: none in the cmponly build (render, validate, names and version only).
func spokeCommands(io.Writer, io.Writer) []*cobra.Command { return nil }
