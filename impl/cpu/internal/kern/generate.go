package kern

//go:generate sh -c "cd asm && go run . -out ../dot_amd64.s -stubs ../dot_stub_amd64.go -pkg kern"
