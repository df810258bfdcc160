"""What the tests share: worlds, fake models wired into games, servers, browsers, and the `gm` command.

Test modules import from here (`from tests.support.rounds import table`), never from one another."""
