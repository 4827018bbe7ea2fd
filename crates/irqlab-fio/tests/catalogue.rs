//! Every option of fio's HOWTO has one treatment in irqlab (honoured, inert with a
//! reason, refused with a reason), and the README lists them as the code has them.

use irqlab_fio::catalogue::{Treatment, markdown, treatment};

const BEGIN: &str = "<!-- catalogue: made by src/catalogue.rs; IRQLAB_WRITE_README=1 cargo test -p irqlab-fio --test catalogue rewrites it -->\n";
const END: &str = "<!-- end of catalogue -->\n";

#[test]
fn every_howto_option_has_a_treatment() {
    let list = include_str!("fixtures/fio-howto-options.txt");
    let mut unknown = Vec::new();
    for name in list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        match treatment(name) {
            Treatment::Unknown => unknown.push(name),
            Treatment::Inert(why) => assert!(!why.is_empty(), "{name} has no reason"),
            Treatment::Refused(why) => assert!(!why.is_empty(), "{name} has no reason"),
            Treatment::Honoured => {}
        }
    }
    assert!(
        unknown.is_empty(),
        "fio options with no treatment: {unknown:?}"
    );
}

#[test]
fn the_readme_lists_the_catalogue_as_the_code_has_it() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let (head, rest) = readme
        .split_once(BEGIN)
        .expect("the README has the catalogue's start marker");
    let (_, tail) = rest
        .split_once(END)
        .expect("the README has the catalogue's end marker");
    let want = format!("{head}{BEGIN}{}{END}{tail}", markdown());
    if std::env::var_os("IRQLAB_WRITE_README").is_some() {
        std::fs::write(path, &want).unwrap();
        return;
    }
    assert!(
        readme == want,
        "README.md's catalogue differs from the code; rerun with IRQLAB_WRITE_README=1 to rewrite it"
    );
}
