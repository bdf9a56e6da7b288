// Package mutation switches the CPU backend into one named semantic
// mistake at a time — tanh GELU, a LayerNorm eps ten times too large, the
// wrong softmax axis, … — so that a test can check that the committed
// fixtures catch every one of them (impl/cpu's TestMutations).
//
// The switches exist only in builds with the "mutation" tag. In every
// other build Enabled is the constant false and On always reports false,
// so the decision points (`if mutation.On(name) { … }` at op level, never
// inside a kernel loop) are removed by the compiler and the production
// code paths are exactly those without the package.
package mutation
