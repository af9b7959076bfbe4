//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
)

const (
	// UIExtension is spokeforge's Argo CD UI extension (the Contracts tab), repo-relative.
	UIExtension = "manifests/ui-extension/extension-spokeforge.js"
	// uiExtensionsDir is where argocd-server reads UI extensions: a fixed path in Argo CD
	// (server/server.go), shared by every argocd-server on the machine.
	uiExtensionsDir = "/tmp/extensions/spokeforge"
)

// InstallUIExtension puts the UI extension where manifests/ui-extension mounts it, so the hub's
// argocd-server serves it as /extensions.js (it reads the folder on every request). The file
// stays: another hub on this machine may be serving it too.
func (h *Hub) InstallUIExtension() error {
	js, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, filepath.FromSlash(UIExtension)))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(uiExtensionsDir, 0o755); err != nil {
		return err
	}
	// Written aside and renamed: a concurrent request never reads half a file.
	tmp := filepath.Join(uiExtensionsDir, fmt.Sprintf("extension-spokeforge.js.%d.tmp", os.Getpid()))
	if err := os.WriteFile(tmp, js, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(uiExtensionsDir, "extension-spokeforge.js"))
}
