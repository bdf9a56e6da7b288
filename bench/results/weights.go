package results

// WeightsKey is the Meta.Extra key (a "weights-sha256:" config line in the text format) of a
// timing file whose cases ran with real weights (`vitbench bench -weights FILE`): the SHA-256
// of FILE in hex. As a config line it keeps benchstat from pooling runs with different weights.
const WeightsKey = "weights-sha256"
