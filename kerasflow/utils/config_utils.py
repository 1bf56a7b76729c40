"""``Config`` (Keras 3's ``keras.utils.Config``): a dict of named values with
attribute access that can be frozen."""

from __future__ import annotations

import copy
import difflib
import json

__all__ = ["Config"]


class Config:
    """Named values read and set as attributes or items.

    Example:
        >>> c = Config(lr=0.1)
        >>> c.epochs = 3
        >>> c.freeze()
        >>> c.as_dict()
        {'lr': 0.1, 'epochs': 3}

    Raises:
        ValueError: setting an attribute of a frozen config.
        AttributeError: reading an unknown name (suggesting a close one).
    """

    def __init__(self, **kwargs):
        self._config = kwargs
        self._frozen = False
        self.__attrs__ = set(dir(self))

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Refuse attribute assignments from now on."""
        self._frozen = True

    def unfreeze(self) -> None:
        self._frozen = False

    def as_dict(self) -> dict:
        return copy.copy(self._config)

    def to_json(self) -> str:
        return json.dumps(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def pop(self, *args):
        return self._config.pop(*args)

    def update(self, *args, **kwargs):
        return self._config.update(*args, **kwargs)

    def get(self, keyname, value=None):
        return self._config.get(keyname, value)

    def __setattr__(self, name, value):
        attrs = self.__dict__.get("__attrs__")
        if attrs is None or name in attrs:
            return object.__setattr__(self, name, value)
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is "
                             "frozen.")
        self._config[name] = value

    def __getattr__(self, name):
        config = self.__dict__.get("_config", {})
        if name in config:
            return config[name]
        msg = f"Unknown attribute: '{name}'."
        close = difflib.get_close_matches(name, config.keys(), n=1, cutoff=0.7)
        if close:
            msg += f" Did you mean '{close[0]}'?"
        raise AttributeError(msg)

    # Items bypass the freeze, as in Keras.
    def __setitem__(self, key, item):
        self._config[key] = item

    def __getitem__(self, key):
        return self._config[key]

    def __delitem__(self, key):
        del self._config[key]

    def __contains__(self, item):
        return item in self._config

    def __iter__(self):
        return iter(sorted(self._config))

    def __len__(self):
        return len(self._config)

    def __repr__(self):
        return f"<Config {self._config}>"
