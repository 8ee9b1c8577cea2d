import BatonCore

/// One result row as libpq returns it (text columns, nil for NULL), read as Baton's types.
/// A column we wrote never fails to parse; a missing value reads as 0 or "".
extension Array where Element == String? {
    /// A bigint column.
    func int(_ index: Int) -> Int64 { Int64(self[index] ?? "") ?? 0 }
    /// A nullable bigint column.
    func optionalInt(_ index: Int) -> Int64? { self[index].flatMap { Int64($0) } }
    /// A text column.
    func text(_ index: Int) -> String { self[index] ?? "" }
    /// A millisecond instant column.
    func instant(_ index: Int) -> Instant { Instant(milliseconds: int(index)) }
    /// A nullable millisecond instant column.
    func optionalInstant(_ index: Int) -> Instant? { optionalInt(index).map(Instant.init(milliseconds:)) }
}

/// Ids as one PostgreSQL array parameter (`{1,2,3}`, used as `$n::bigint[]`).
func bigintArray(_ ids: [Int64]) -> String { "{" + ids.map(String.init).joined(separator: ",") + "}" }
