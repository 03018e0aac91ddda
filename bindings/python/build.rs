// With the `torch` feature the extension links libtorch, and is loaded from wherever pip
// installs it, so it finds libtorch by the absolute path it was built against (the checkout's
// vendor/libtorch: scripts/fetch-libtorch.sh).
fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    if let Ok(dir) = std::env::var("LIBTORCH") {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{dir}/lib");
    }
}
