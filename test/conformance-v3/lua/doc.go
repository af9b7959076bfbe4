// Package lua runs spokeforge's Lua health checks and resource actions (lua/ at the repository
// root, shipped by the argocd-cm Component) through Argo CD v3.6.2's own Lua VM (util/lua), as the
// application controller and the API server run them: their fixtures (lua/<group>/<Kind>/
// health_test.yaml and actions/action_test.yaml), Argo CD's own fixtures for the kinds they
// replace, the agent's status shape, objects built to break them, the fast paths against the
// full checks, Minify's output (FuzzMinify), and the benchmarks BenchmarkHealth,
// BenchmarkHealthRatio and BenchmarkHostile. Besides this file it has tests only. The tests that need no Argo
// CD (the sources, the sfcore copies, Minify, the generated Component) stay in package lua of the
// main module, which compiles no Argo CD.
package lua
