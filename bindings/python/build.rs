// The extension is loaded from wherever pip installs it, so it finds libtorch by the absolute
// path it was built against (the checkout's vendor/libtorch: scripts/fetch-libtorch.sh).
fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(dir) = std::env::var("LIBTORCH") {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{dir}/lib");
    }
}
