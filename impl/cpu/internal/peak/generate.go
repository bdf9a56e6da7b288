package peak

//go:generate sh -c "cd asm && go run . -out ../fma_amd64.s -stubs ../fma_stub_amd64.go -pkg peak"
