package extism

// The test modules in testdata are built from the .wat next to them with
// wat2wasm (Debian package wabt); TestTestdataMatchesSources fails when one
// drifts. ($DOLLAR is go generate's spelling of a literal dollar sign.)
//go:generate sh -c "cd testdata && for f in *.wat; do wat2wasm $DOLLAR{f} -o $DOLLAR{f%.wat}.wasm || exit 1; done"
