//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitRepo is a bare git repository on disk, served to Argo CD as a file:// URL, with a work
// tree used to commit to it.
type GitRepo struct {
	URL  string // file:///.../NAME.git
	Bare string
	Work string
}

// NewGitRepo creates the bare repository NAME.git under h.Dir/git (branch main) and commits
// files (path relative to the repository root -> content) to it.
func (h *Hub) NewGitRepo(name string, files map[string]string) (*GitRepo, error) {
	root := filepath.Join(h.Dir, "git")
	r := &GitRepo{Bare: filepath.Join(root, name+".git"), Work: filepath.Join(root, name+"-work")}
	r.URL = "file://" + r.Bare
	if err := gitRun(root, "init", "--quiet", "--bare", "--initial-branch=main", r.Bare); err != nil {
		return nil, err
	}
	if err := gitRun(root, "init", "--quiet", "--initial-branch=main", r.Work); err != nil {
		return nil, err
	}
	if err := gitRun(r.Work, "remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	// An identity of the work tree's own: a user's `git commit` there (make demo's steps) works
	// on a machine whose git knows no user.
	for k, v := range map[string]string{"user.name": "spokeforge-e2e", "user.email": "e2e@spokeforge.invalid"} {
		if err := gitRun(r.Work, "config", k, v); err != nil {
			return nil, err
		}
	}
	if err := r.Commit("initial", files); err != nil {
		return nil, err
	}
	// main tracks origin's main, so a plain `git pull` or `git push` in the work tree works.
	return r, gitRun(r.Work, "branch", "--set-upstream-to=origin/main", "main")
}

// Commit writes files into the work tree (an empty content removes the file), commits them
// and pushes to the bare repository. It returns after the push.
func (r *GitRepo) Commit(msg string, files map[string]string) error {
	for p, content := range files {
		full := filepath.Join(r.Work, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := gitRun(r.Work, "add", "--all"); err != nil {
		return err
	}
	if err := gitRun(r.Work, "commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return err
	}
	return gitRun(r.Work, "push", "--quiet", "origin", "main")
}

// Head returns the commit SHA of main.
func (r *GitRepo) Head() (string, error) {
	out, err := gitOutput(r.Work, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

func gitRun(dir string, args ...string) error {
	_, err := gitOutput(dir, args...)
	return err
}

func gitOutput(dir string, args ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=spokeforge-e2e", "-c", "user.email=e2e@spokeforge.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out), nil
}
