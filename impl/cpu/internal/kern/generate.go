package kern

//go:generate sh -c "cd asm && go run . -out ../simd_amd64.s -stubs ../simd_stub_amd64.go -pkg kern"
