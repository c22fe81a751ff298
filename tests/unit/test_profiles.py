"""Sealed profiles (services/common/profiles.py): a profile opens only with its player's key and
only as that player's; without the key (erased) it shows as erased; players with no profile show
their id (None)."""

from __future__ import annotations

from services.common import profiles
from services.common.profiles import ERASED_NAME, ERASED_RECORD, display_names, key_of, new_key_record, seal, unseal


def test_a_profile_opens_with_its_players_key_and_holds_no_plain_name():
    key, key_record = new_key_record()
    record = seal(key, "g~abc", {"name": "Zebulon"})
    assert b"Zebulon" not in record and key_of(key_record) == key
    assert unseal(key, "g~abc", record) == {"name": "Zebulon"}


def test_a_sealed_profile_does_not_open_with_another_key_or_as_another_player():
    key, _ = new_key_record()
    other, _ = new_key_record()
    record = seal(key, "g~abc", {"name": "Zebulon"})
    assert unseal(other, "g~abc", record) is None
    assert unseal(key, "g~xyz", record) is None  # moved to another player's key: refused (AAD)
    assert unseal(None, "g~abc", record) is None


def test_names_shown_after_erasure_and_for_players_without_a_profile():
    key, key_record = new_key_record()
    sealed = seal(key, "g~abc", {"name": "Zebulon"})
    keys = {"g~abc": key_of(key_record)}
    assert display_names(["g~abc", "bot:mcts-1"], keys, {"g~abc": sealed}) == {"g~abc": "Zebulon", "bot:mcts-1": None}
    # erased: the key gone (its record compacted away) and the profile replaced by the marker,
    # or the key gone while the old sealed bytes still sit in a segment: erased either way
    assert display_names(["g~abc"], {}, {"g~abc": ERASED_RECORD}) == {"g~abc": ERASED_NAME}
    assert display_names(["g~abc"], {}, {"g~abc": sealed}) == {"g~abc": ERASED_NAME}


def test_opaque_guest_ids_are_random_and_of_the_player_id_grammar():
    ids = {profiles.opaque_guest_id() for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("g~") and len(i) <= 64 for i in ids)


def test_contact_addresses_are_sealed_in_the_profile_beside_the_name():
    key, key_record = new_key_record()
    profile = profiles.with_contact({"name": "Zebulon"}, "em-1", "zeb@example.org")
    profile = profiles.with_contact(profile, "we-2", "https://hooks.example.com/zeb")
    record = seal(key, "g~abc", profile)
    assert b"zeb@example.org" not in record and b"hooks.example.com" not in record
    opened = unseal(key, "g~abc", record)
    assert opened == {
        "name": "Zebulon",
        "contacts": {"em-1": "zeb@example.org", "we-2": "https://hooks.example.com/zeb"},
    }
    assert profiles.contacts_of(profiles.with_contact(opened, "em-1", None)) == {
        "we-2": "https://hooks.example.com/zeb"
    }
    assert profiles.contacts_of(unseal(None, "g~abc", record)) == {}  # erased: no address opens
    keys = {"g~abc": key_of(key_record)}
    assert display_names(["g~abc"], keys, {"g~abc": record}) == {"g~abc": "Zebulon"}


def test_a_profile_with_contacts_and_no_name_shows_the_id_until_erased():
    key, key_record = new_key_record()  # a platform's player who registered an e-mail address
    record = seal(key, "ext-42", profiles.with_contact(None, "em-1", "x@example.org"))
    assert display_names(["ext-42"], {"ext-42": key_of(key_record)}, {"ext-42": record}) == {"ext-42": None}
    assert display_names(["ext-42"], {}, {"ext-42": record}) == {"ext-42": ERASED_NAME}
