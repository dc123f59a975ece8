//! Tables appended by pages are the tables SQL's `INSERT … SELECT` makes of the same files:
//! the same rows with the same ids and moved columns, indexes SQLite's integrity check finds
//! whole, b-trees of one leaf to several levels, files of no rows among them.

use super::*;
use proptest::prelude::*;
use rusqlite::types::Value as Sql;
use rusqlite::Connection;

const SCHEMA: &str = r#"
    CREATE TABLE other (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT);
    CREATE TABLE t (
        id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER,
        ref INTEGER, key INTEGER, text TEXT, value REAL
    );
    CREATE INDEX t_ref ON t (ref);
    CREATE INDEX t_key ON t (key);
"#;

/// A row of a stored file's table `t`: `ref` moved as a reference, `key` kept (files share
/// keys), `nid` mapped.
#[derive(Debug, Clone)]
struct Row {
    nid: Option<i64>,
    reference: i64,
    key: Option<i64>,
    text: String,
    value: Option<f64>,
}

fn rows() -> impl Strategy<Value = Vec<Row>> {
    let row = (
        prop::option::of(0i64..3),
        prop_oneof![Just(0i64), 1i64..1_000_000],
        prop::option::of(-70_000i64..70_000),
        prop_oneof![4 => "[a-z]{0,12}", 1 => "[a-z]{200,1200}"],
        prop::option::of(-1e9f64..1e9),
    )
        .prop_map(|(nid, reference, key, text, value)| Row {
            nid,
            reference,
            key,
            text,
            value,
        });
    prop::collection::vec(row, 0..2_500)
}

fn create(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn
}

/// A stored file whose table `t` holds `rows` (ids 1, 2, ...), inserted last to first where
/// `reversed`.
fn stored(path: &Path, rows: &[Row], reversed: bool) {
    let mut conn = create(path);
    let tx = conn.transaction().unwrap();
    let mut numbered: Vec<(usize, &Row)> = rows.iter().enumerate().collect();
    if reversed {
        numbered.reverse();
    }
    for (i, row) in numbered {
        tx.execute(
            "INSERT INTO t (id, guid, nid, ref, key, text, value) VALUES (?1, 'g', ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![i as i64 + 1, row.nid, row.reference, row.key, row.text, row.value],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// A merged file being made: a row of another table first (pages before the table's).
fn merged(path: &Path) -> Connection {
    let conn = create(path);
    conn.execute_batch("INSERT INTO other (name) VALUES ('before');")
        .unwrap();
    conn
}

/// A file's table `t` row by row, its `key` index in order, and SQLite's integrity check.
type Contents = (Vec<Vec<Sql>>, Vec<(Option<i64>, i64)>, String);

fn contents(path: &Path) -> Contents {
    let conn = Connection::open(path).unwrap();
    let mut statement = conn.prepare("SELECT * FROM t ORDER BY id").unwrap();
    let rows = statement
        .query_map([], |r| (0..7).map(|i| r.get::<_, Sql>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut by_key = conn
        .prepare("SELECT key, id FROM t INDEXED BY t_key ORDER BY key, id")
        .unwrap();
    let keys = by_key
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let check = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    (rows, keys, check)
}

fn root(conn: &Connection, name: &str) -> u32 {
    conn.query_row(
        "SELECT rootpage FROM sqlite_master WHERE name = ?1",
        [name],
        |r| r.get(0),
    )
    .unwrap()
}

/// Appends the files' tables `t` both ways: by pages (its result) and by SQL, into `dir`.
fn both_ways(dir: &Path, files: &[Vec<Row>]) -> (Result<(), Unsupported>, PathBuf, PathBuf) {
    both_ways_with(dir, files, false)
}

/// [`both_ways`], each file's rows inserted last to first where `reversed`.
fn both_ways_with(
    dir: &Path,
    files: &[Vec<Row>],
    reversed: bool,
) -> (Result<(), Unsupported>, PathBuf, PathBuf) {
    let (paged, sql) = (dir.join("paged.db"), dir.join("sql.db"));
    let nodes: Arc<[(i64, i64)]> = Arc::new([(0, 7), (1, 1)]);
    let conn = merged(&paged);
    let table = |name: &str| root(&conn, name);
    let mut table = Table {
        root: table("t"),
        indexes: vec![(table("t_key"), vec![4]), (table("t_ref"), vec![3])],
        parts: Vec::new(),
    };
    drop(conn);
    let by_sql = merged(&sql);
    let mut offset = 0;
    for (i, rows) in files.iter().enumerate() {
        let path = dir.join(format!("p{i}.db"));
        stored(&path, rows, reversed);
        let source = Connection::open(&path).unwrap();
        // Other tables' rows before this file's, as a merge moves references by.
        let moved = 1_000 * i as i64;
        table.parts.push(Part {
            path: path.clone(),
            root: root(&source, "t"),
            // In the order of `Table::indexes`.
            index_roots: vec![root(&source, "t_key"), root(&source, "t_ref")],
            rows: rows.len() as i64,
            id_offset: offset,
            moves: vec![
                Move::Keep,
                Move::Keep,
                Move::Map(Arc::clone(&nodes)),
                Move::Add(moved),
                Move::Keep,
                Move::Keep,
                Move::Keep,
            ],
        });
        by_sql
            .execute_batch(&format!(
                "ATTACH '{}' AS src;
                 INSERT INTO t SELECT id + {offset}, guid, CASE nid WHEN 0 THEN 7 WHEN 1 THEN 1 END,
                   CASE WHEN ref = 0 THEN 0 ELSE ref + {moved} END, key, text, value FROM src.t;
                 DETACH src;",
                path.display()
            ))
            .unwrap();
        offset += rows.len() as i64;
    }
    drop(by_sql);
    (append(&paged, &[table]), paged, sql)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn tables_appended_by_pages_are_those_sql_appends(files in prop::collection::vec(rows(), 1..4)) {
        let dir = tempfile::tempdir().unwrap();
        let (written, paged, sql) = both_ways(dir.path(), &files);
        prop_assert_eq!(written, Ok(()));
        let (rows, keys, check) = contents(&paged);
        prop_assert_eq!(check, "ok");
        let expected = contents(&sql);
        prop_assert_eq!(rows, expected.0);
        prop_assert_eq!(keys, expected.1);
    }
}

fn row(text: String) -> Row {
    Row {
        nid: Some(1),
        reference: 5,
        key: Some(3),
        text,
        value: None,
    }
}

/// Files large enough for interior pages two levels deep, and one of no rows between them.
#[test]
fn large_tables_take_several_levels() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<Row> = (0..60_000).map(|i| row(format!("{i}"))).collect();
    let (written, paged, sql) = both_ways(dir.path(), &[many.clone(), Vec::new(), many]);
    assert_eq!(written, Ok(()));
    let (rows, keys, check) = contents(&paged);
    assert_eq!(check, "ok");
    let expected = contents(&sql);
    assert!(rows == expected.0 && keys == expected.1);
}

/// A file whose rows were inserted last to first: its leaves are not in the file's order (each
/// split put a new page at its end), so they are read apart, the rows the same.
#[test]
fn leaves_out_of_the_file_s_order_are_read_apart() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<Row> = (0..20_000).map(|i| row(format!("{i}"))).collect();
    let (written, paged, sql) = both_ways_with(dir.path(), &[rows.clone(), rows], true);
    assert_eq!(written, Ok(()));
    let (rows, keys, check) = contents(&paged);
    assert_eq!(check, "ok");
    let expected = contents(&sql);
    assert!(rows == expected.0 && keys == expected.1);
    let mut pages = Pages::open(&dir.path().join("p1.db")).unwrap();
    let t = root(&Connection::open(dir.path().join("p1.db")).unwrap(), "t");
    let leaves = source::leaves(&mut pages, t).unwrap();
    assert!(
        leaves.windows(2).any(|pair| pair[0] > pair[1]),
        "the case is the one meant"
    );
}

/// A row too large for a page (it spills to overflow pages) is left to SQL; so is a moved
/// column that holds no integer.
#[test]
fn what_pages_cannot_hold_is_declined() {
    let dir = tempfile::tempdir().unwrap();
    let spilled = vec![row("x".repeat(5_000))];
    let (written, ..) = both_ways(dir.path(), &[Vec::new(), spilled]);
    assert_eq!(
        written,
        Err(Unsupported("a payload spilled to overflow pages"))
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    stored(&path, &[row(String::new())], false);
    Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE t SET ref = 'text'")
        .unwrap();
    let t = root(&Connection::open(&path).unwrap(), "t");
    let mut moves = vec![Move::Keep; 7];
    moves[3] = Move::Add(1);
    let mut rewriter = Rewriter::default();
    let mut pages = Pages::open(&path).unwrap();
    let leaves = source::leaves(&mut pages, t).unwrap();
    let page = pages.page(leaves[0]).unwrap();
    let result = source::leaf_rows(page, leaves[0], |_, record| {
        rewriter.rewrite(record, &moves)
    });
    assert_eq!(result, Err(Unsupported("an id that is not an integer")));
}

/// Tables whose leaves lie among each other's in their files, written by three threads side by
/// side (whatever the cores), one of them with its leaves out of the file's order: each the
/// table SQL appends.
#[test]
fn tables_side_by_side_are_those_sql_appends() {
    let dir = tempfile::tempdir().unwrap();
    let schema = |conn: &Connection| {
        conn.execute_batch(
            "CREATE TABLE a (id INTEGER PRIMARY KEY, ref INTEGER, text TEXT);
             CREATE TABLE b (id INTEGER PRIMARY KEY, ref INTEGER, text TEXT);
             CREATE TABLE c (id INTEGER PRIMARY KEY, ref INTEGER, text TEXT);",
        )
        .unwrap()
    };
    let (paged, sql) = (dir.path().join("paged.db"), dir.path().join("sql.db"));
    schema(&Connection::open(&paged).unwrap());
    let by_sql = Connection::open(&sql).unwrap();
    schema(&by_sql);
    let names = ["a", "b", "c"];
    let merged = Connection::open(&paged).unwrap();
    let mut tables: Vec<Table> = (names.iter())
        .map(|name| Table {
            root: root(&merged, name),
            indexes: Vec::new(),
            parts: Vec::new(),
        })
        .collect();
    drop(merged);
    for file in 0..2i64 {
        let path = dir.path().join(format!("p{file}.db"));
        let mut conn = Connection::open(&path).unwrap();
        schema(&conn);
        let tx = conn.transaction().unwrap();
        for i in 1..=6_000i64 {
            for (t, name) in names.iter().enumerate() {
                // Table c is filled last to first: its leaves are not in the file's order.
                let id = if *name == "c" { 6_001 - i } else { i };
                tx.execute(
                    &format!("INSERT INTO {name} (id, ref, text) VALUES (?1, ?2, ?3)"),
                    rusqlite::params![id, i * (t as i64 + 1), format!("{file}:{name}:{id}")],
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
        for (t, name) in names.iter().enumerate() {
            tables[t].parts.push(Part {
                path: path.clone(),
                root: root(&conn, name),
                index_roots: Vec::new(),
                rows: 6_000,
                id_offset: 6_000 * file,
                moves: vec![Move::Keep, Move::Add(100 * file), Move::Keep],
            });
            by_sql
                .execute_batch(&format!(
                    "ATTACH '{}' AS src;
                     INSERT INTO {name} SELECT id + {}, CASE WHEN ref = 0 THEN 0 ELSE ref + {} END, text FROM src.{name};
                     DETACH src;",
                    path.display(),
                    6_000 * file,
                    100 * file
                ))
                .unwrap();
        }
    }
    drop(by_sql);
    assert_eq!(append_with(&paged, &tables, 3), Ok(()));
    let read = |path: &Path| {
        let conn = Connection::open(path).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        let rows: Vec<Vec<(i64, i64, String)>> = (names.iter())
            .map(|name| {
                let mut statement = conn
                    .prepare(&format!("SELECT id, ref, text FROM {name} ORDER BY id"))
                    .unwrap();
                let rows = statement
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .unwrap();
                rows.collect::<Result<_, _>>().unwrap()
            })
            .collect();
        (check, rows)
    };
    let (check, rows) = read(&paged);
    assert_eq!(check, "ok");
    assert_eq!(rows, read(&sql).1);
    assert_eq!(rows[2].len(), 12_000);
}
