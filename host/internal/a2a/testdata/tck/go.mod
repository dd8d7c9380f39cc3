module tckguest

go 1.26.8

require github.com/skillhost/skillhost/sdk v0.0.0

require github.com/extism/go-pdk v1.1.3 // indirect

replace github.com/skillhost/skillhost/sdk => ../../../../../sdk
