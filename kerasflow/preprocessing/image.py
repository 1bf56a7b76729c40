"""``keras.preprocessing.image`` (Keras 3): image array and file helpers."""

from kerasflow.utils.image_utils import (
    array_to_img,
    img_to_array,
    load_img,
    save_img,
    smart_resize,
)

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]
