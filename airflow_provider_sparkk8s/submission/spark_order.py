"""The iteration order of Spark's prefixed conf maps, which fixes list orders in the pod.

Spark reads a family such as `spark.kubernetes.driverEnv.*` with
`SparkConf.getAllWithPrefix(prefix).toMap` and builds env vars, volumes, mounts and labels in
that map's iteration order. Nobody chose that order; it falls out of two hash tables:

1. `SparkConf.getAll` maps its ConcurrentHashMap's entries into a Scala mutable HashSet of
   `(key, value)` tuples, so `getAllWithPrefix` returns them in that set's order: by the
   tuple's MurmurHash3 hash in a table sized by the number of conf entries (Scala 2.13's
   chained table for Spark 4; Scala 2.12's open-addressing FlatHashTable for Spark 3.5).
2. `.toMap` keeps that order for up to four entries (Scala's Map1..Map4); from five on it
   is an immutable HashMap, iterated in the order of its hash trie over the stripped keys'
   `improve(hashCode)`: Scala 2.13 (Spark 4) visits a node's own entries before its
   sub-nodes (CHAMP); Scala 2.12 (Spark 3.5) visits both in slot order.

Reproducing this keeps byte-for-byte parity of list orders with spark-submit. The Spark 4
model was checked against Spark 4.3.0's own classes (`getAll`, `getAllWithPrefix(..).toMap`,
`KubernetesVolumeUtils.parseVolumesWithPrefix`) on confs of 2 to 33 entries.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

_MASK32 = 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value >= 1 << 31 else value


@functools.lru_cache(maxsize=4096)  # conf keys recur in every submission of a process
def java_string_hash(text: str) -> int:
    """`String.hashCode()`: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    if text.isascii():  # one code unit per character
        for char in text:
            h = (31 * h + ord(char)) & _MASK32
        return _int32(h)
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        h = (31 * h + (data[index] << 8 | data[index + 1])) & _MASK32
    return _int32(h)


def scala_improve(hcode: int) -> int:
    """`scala.collection.Hashing.improve` (2.12 and 2.13 HashMap key hashing), unsigned."""
    h = (hcode + ~(hcode << 9)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def _rotl(value: int, distance: int) -> int:
    return ((value << distance) | (value >> (32 - distance))) & _MASK32


def _murmur_mix_last(h: int, data: int) -> int:
    k = _rotl((data * 0xCC9E2D51) & _MASK32, 15)
    return (h ^ ((k * 0x1B873593) & _MASK32)) & _MASK32


def _murmur_mix(h: int, data: int) -> int:
    return (_rotl(_murmur_mix_last(h, data), 13) * 5 + 0xE6546B64) & _MASK32


def _murmur_finalize(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    return h ^ (h >> 16)


_PRODUCT_SEED = 0xCAFEBABE


def scala_pair_hash(key: str, value: str, scala_213: bool) -> int:
    """`(key, value).##`: MurmurHash3.productHash; 2.13 also mixes in the prefix "Tuple2"."""
    h = _PRODUCT_SEED
    if scala_213:
        h = _murmur_mix(h, java_string_hash("Tuple2") & _MASK32)
    h = _murmur_mix(h, java_string_hash(key) & _MASK32)
    h = _murmur_mix(h, java_string_hash(value) & _MASK32)
    return _int32(_murmur_finalize(h, 2))


def _hash_set_213_order(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Iteration order of a Scala 2.13 mutable.HashSet filled with `pairs` (capacity 16)."""
    size = 16
    for count in range(len(pairs)):
        if count + 1 >= int(size * 0.75):
            size *= 2

    def slot(pair: tuple[str, str]) -> tuple[int, int]:
        h = scala_pair_hash(*pair, scala_213=True) & _MASK32
        improved = _int32(h ^ (h >> 16))
        return improved & (size - 1), improved  # buckets keep their nodes sorted by hash

    return sorted(pairs, key=slot)


def _byteswap32(value: int) -> int:
    h = (value * 0x9E3775CD) & _MASK32
    h = int.from_bytes(h.to_bytes(4, "big"), "little")
    return (h * 0x9E3775CD) & _MASK32


def _hash_set_212_order(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Iteration order of a Scala 2.12 mutable.HashSet (FlatHashTable, linear probing)."""
    table: list[tuple[str, str] | None] = [None] * 32

    def add(entries: list[tuple[str, str]]) -> None:
        length = len(table)
        seed = (length - 1).bit_count()
        for pair in entries:
            improved = _byteswap32(scala_pair_hash(*pair, scala_213=False) & _MASK32)
            rotation = seed % 32
            rotated = ((improved >> rotation) | (improved << (32 - rotation))) & _MASK32
            index = (rotated >> (32 - (length - 1).bit_count())) & (length - 1)
            while table[index] is not None:
                index = (index + 1) % length
            table[index] = pair

    for count, pair in enumerate(pairs, start=1):
        add([pair])
        if count >= len(table) * 450 // 1000:  # load factor 0.45: grow and re-add in order
            old = [entry for entry in table if entry is not None]
            table = [None] * (len(table) * 2)
            add(old)
    return [entry for entry in table if entry is not None]


def _concurrent_hash_map_order(keys: list[str]) -> list[str]:
    """Keys in a default ConcurrentHashMap's bucket order (resized at 3/4 full)."""
    size = 16
    while len(keys) >= size - (size >> 2):
        size <<= 1

    def bucket(key: str) -> int:
        h = java_string_hash(key) & _MASK32
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (size - 1)

    return sorted(keys, key=bucket)


def get_all_order(conf: Mapping[str, str], scala_213: bool) -> tuple[str, ...]:
    """Keys in the order of `SparkConf.getAll` for a conf holding exactly `conf`."""
    # The set is filled in the ConcurrentHashMap's order, which decides linear-probing clashes.
    pairs = [(key, conf[key]) for key in _concurrent_hash_map_order(list(conf))]
    ordered = _hash_set_213_order(pairs) if scala_213 else _hash_set_212_order(pairs)
    return tuple(key for key, _ in ordered)


@functools.lru_cache(maxsize=16)  # a process renders the same conf again and again (a DAG)
def get_all_order_of(items: tuple[tuple[str, str], ...], scala_213: bool) -> tuple[str, ...]:
    """`get_all_order` of the conf holding `items`, remembered for the next submission."""
    return get_all_order(dict(items), scala_213)


def _trie_order(keys: list[str], hashes: Mapping[str, int], shift: int, champ: bool) -> list[str]:
    if len(keys) <= 1 or shift >= 35:  # a full-hash collision keeps insertion order
        return list(keys)
    slots: dict[int, list[str]] = {}
    for key in keys:
        slots.setdefault((hashes[key] >> shift) & 0x1F, []).append(key)
    ordered_slots = sorted(slots.items())
    if champ:
        payload = [group[0] for _, group in ordered_slots if len(group) == 1]
        nodes = [
            _trie_order(group, hashes, shift + 5, champ)
            for _, group in ordered_slots
            if len(group) > 1
        ]
        return payload + [key for node in nodes for key in node]
    return [
        key for _, group in ordered_slots for key in _trie_order(group, hashes, shift + 5, champ)
    ]


def scala_map_order(keys: Iterable[str], scala_213: bool) -> list[str]:
    """Iteration order of an immutable Map built from `keys` (given in insertion order)."""
    keys = list(dict.fromkeys(keys))
    if len(keys) <= 4:
        return keys
    hashes = {key: scala_improve(java_string_hash(key)) for key in keys}
    return _trie_order(keys, hashes, 0, champ=scala_213)


def prefixed_in_order(
    conf: Mapping[str, str], get_all_order: Sequence[str], prefix: str, scala_213: bool
) -> dict[str, str]:
    """`conf.getAllWithPrefix(prefix).toMap`, prefix stripped, in Spark's iteration order,
    given `get_all_order(conf)` (`DriverConf.prefixed` computes that once per conf).

    `conf` must hold every entry of the SparkConf spark-submit hands to the Kubernetes
    client: the table sizes, and so the order, depend on how many there are.
    """
    entries = {key[len(prefix) :]: conf[key] for key in get_all_order if key.startswith(prefix)}
    return {key: entries[key] for key in scala_map_order(list(entries), scala_213)}


# --- hashes of Scala values, for sets of case classes -----------------------------------


def scala_hash(value: object, scala_213: bool) -> int:
    """`value.##` for the few Scala values Spark's conf classes hold (unsigned 32-bit).

    str -> String; bool -> Boolean; None -> `None`; ("Some", x) -> `Some(x)`;
    (prefix, *fields) with a class-name prefix -> a case class; dict -> immutable Map.
    """
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return java_string_hash(value) & _MASK32
    if value is None:
        return java_string_hash("None") & _MASK32
    if isinstance(value, dict):
        return _map_hash(value, scala_213)
    if isinstance(value, tuple):
        prefix, *fields = value
        return product_hash(prefix, [scala_hash(field, scala_213) for field in fields], scala_213)
    raise TypeError(f"no Scala hash for {type(value).__name__}")


def product_hash(prefix: str, field_hashes: list[int], scala_213: bool) -> int:
    """MurmurHash3.productHash of a case class; 2.13 mixes in the class name first."""
    if not field_hashes:
        return java_string_hash(prefix) & _MASK32
    h = _PRODUCT_SEED
    if scala_213:
        h = _murmur_mix(h, java_string_hash(prefix) & _MASK32)
    for field_hash in field_hashes:
        h = _murmur_mix(h, field_hash)
    return _murmur_finalize(h, len(field_hashes))


def _map_hash(entries: dict[str, Any], scala_213: bool) -> int:
    """MurmurHash3.mapHash: an unordered combination of the entries' pair hashes."""
    a = b = 0
    c = 1
    for key, value in entries.items():
        h = product_hash(
            "Tuple2", [scala_hash(key, scala_213), scala_hash(value, scala_213)], scala_213
        )
        a = (a + h) & _MASK32
        b ^= h
        c = (c * (h | 1)) & _MASK32
    h = java_string_hash("Map") & _MASK32
    h = _murmur_mix(h, a)
    h = _murmur_mix(h, b)
    h = _murmur_mix_last(h, c)
    return _murmur_finalize(h, len(entries))


def hash_set_order(element_hashes: list[int], scala_213: bool) -> list[int]:
    """Positions, in iteration order, of elements (given in insertion order by their `##`)
    in a Scala immutable Set: Set1..Set4 keep insertion order, larger sets are hash tries."""
    if len(element_hashes) <= 4:
        return list(range(len(element_hashes)))
    keys = [str(index) for index in range(len(element_hashes))]
    hashes = {key: scala_improve(_int32(h)) for key, h in zip(keys, element_hashes, strict=True)}
    return [int(key) for key in _trie_order(keys, hashes, 0, champ=scala_213)]


def scala_set_order(elements: list[object], scala_213: bool) -> list[int]:
    """`hash_set_order` for Scala values (see `scala_hash`)."""
    return hash_set_order([scala_hash(element, scala_213) for element in elements], scala_213)


def lombok_hash(field_hashes: list[int]) -> int:
    """Lombok's `hashCode` (fabric8 model classes): 59-polynomial from 1; null fields are 43."""
    result = 1
    for field_hash in field_hashes:
        result = (result * 59 + field_hash) & _MASK32
    return result
