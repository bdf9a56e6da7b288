// Package peak measures the machine's ceilings that kernel timings are read
// against: the fp32 FMA throughput of one core and of all threads, and the
// memory bandwidth of a STREAM-style triad and copy over buffers much larger
// than the caches.
//
// The FMA loop has an avo-generated assembly version per ISA (AVX-512 zmm,
// AVX2+FMA ymm), chosen at run time from the CPU's features, and a pure-Go
// twin that is the only path with the build tag purego or off amd64. Every
// result names the path that produced it.
package peak
