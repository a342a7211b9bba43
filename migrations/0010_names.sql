-- Agent names in any script: "Zoë", "Ζωή", "李", "अमित" as well as "Scout".
--
-- The application checks a name precisely (a letter, then up to 39 letters,
-- marks, digits, - or _, in NFC). This constraint is the database's backstop
-- and must accept every such name, so it is written without the locale's
-- character classes for what it admits: a server Postgres whose LC_CTYPE is C
-- classifies no letter outside ASCII as [[:alpha:]]. It refuses what no name
-- holds: ASCII punctuation other than - and _, controls and spaces, a leading
-- digit, - or _, and more than 40 characters.
alter table agents drop constraint agents_name_check;
alter table agents add constraint agents_name_check check (
  char_length(name) between 1 and 40
  and name !~ '^[0-9_-]'
  and name !~ '[\x01-\x2c\x2e\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x9f[:space:]]'
);
