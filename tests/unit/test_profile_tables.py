"""Opening a contact address from the two tables (services/common/profile_tables.py), as the notifier
does when it sends: an address opens while the player's key does; after erasure it never opens again
(fail closed), which is told apart from a profile not read yet (retried)."""

from __future__ import annotations

from services.common import profiles
from services.common.kafka_table import KafkaTable
from services.common.profile_tables import Contact, ProfileTables


def _tables() -> ProfileTables:
    # never started: `expect` sets what a table reads, as a write of this process does
    return ProfileTables(KafkaTable("127.0.0.1:1", "keys"), KafkaTable("127.0.0.1:1", "profiles"))


def test_an_address_opens_with_the_key_and_never_after_erasure():
    tables = _tables()
    key, key_record = profiles.new_key_record()
    tables.keys.expect("g~abc", key_record)
    tables.sealed.expect("g~abc", profiles.seal(key, "g~abc", profiles.with_contact(None, "em-1", "a@example.org")))
    assert tables.contact("g~abc", "em-1") == Contact("a@example.org")
    assert tables.contact("g~abc", "em-2") == Contact(None, erased=False)  # not in the profile: not erased
    tables.keys.expect("g~abc", None)  # the tombstone, before the erased marker is read
    assert tables.contact("g~abc", "em-1") == Contact(None, erased=True)
    tables.sealed.expect("g~abc", profiles.ERASED_RECORD)
    assert tables.contact("g~abc", "em-1") == Contact(None, erased=True) and tables.erased("g~abc")


def test_a_player_without_a_profile_is_not_erased():
    tables = _tables()
    assert tables.contact("ext-1", "em-1") == Contact(None, erased=False) and not tables.erased("ext-1")
