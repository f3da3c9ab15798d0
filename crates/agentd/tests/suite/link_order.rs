//! The symbol-ordering list the release build gives the linker
//! (`build.rs`, `build/link_order.rs`): an LTO-renamed local copy is found
//! after its number moved, and nothing else is added.

#[path = "../../build/link_order.rs"]
mod list;

#[test]
fn a_renamed_local_copy_is_listed_with_its_neighbours_nearest_first() {
    let out = list::with_neighbours("# comment\n\n_ZN4http6header3mapE.7392\n", 2);
    let names: Vec<&str> = out.lines().collect();
    assert_eq!(
        names,
        [
            "_ZN4http6header3mapE.7392",
            "_ZN4http6header3mapE.7393",
            "_ZN4http6header3mapE.7391",
            "_ZN4http6header3mapE.7394",
            "_ZN4http6header3mapE.7390",
        ]
    );
}

#[test]
fn other_names_are_listed_once_as_written_and_in_order() {
    let text = "main\n_ZN5tokio3run17h0123456789abcdefE\nmain\nfoo.cold\n__libc_start_main\n";
    let out = list::with_neighbours(text, list::LTO_SUFFIX_WINDOW);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["main", "_ZN5tokio3run17h0123456789abcdefE", "foo.cold", "__libc_start_main"]
    );
}

#[test]
fn neighbours_overlapping_a_listed_name_keep_its_first_place_and_stop_at_zero() {
    let out = list::with_neighbours("a.1\na.3\n", 2);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["a.1", "a.2", "a.0", "a.3", "a.4", "a.5"]);
}
